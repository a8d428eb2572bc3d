//===- models/nmt/DecoderStack.cpp - Decoder layers 2..M -----------------===//
//
// The deep architectures' decoder layers above the conditional pair. Each
// reads the layer below at the same step (and the context, in gnmt), never
// its own output, so training runs each as one whole-sequence forward over
// the target steps, and backward the same way, top layer first.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/BeamSearch.h"
#include "models/nmt/Model.h"

#include <algorithm>

namespace nmt {

void Model::addUpperLayers(const cellrt::Cell &cell) {
  // gnmt's layers have two sources (the state below and the context).
  const cellrt::Cell &upperCell =
      twoSourceCell && config.arch == "gnmt" ? *twoSourceCell : cell;
  if (!isDeepArchitecture(config.arch) && config.decLayers != 1)
    throw DataError("--arch " + config.arch + " has one decoder layer (" +
                    std::to_string(config.decLayers) +
                    " asked); stacks: --arch gnmt or deep");
  if (config.decLayers < 1 || config.decLayers > 16)
    throw DataError("--dec-layers: 1 to 16, not " +
                    std::to_string(config.decLayers));
  const int64_t width = decoder2.outputWidth();
  const bool gnmt = config.arch == "gnmt";
  for (int64_t l = 2; l <= config.decLayers; ++l) {
    std::vector<int64_t> sources = {width};
    if (gnmt)
      sources.push_back(contextWidth());
    upper.push_back(std::make_unique<CellLayer>(
        upperCell, "decoder.l" + std::to_string(l), sources, config.hidden,
        store));
    if (upper.back()->outputWidth() != width)
      throw DataError("decoder layer " + std::to_string(l) + ": cell '" +
                      config.cell + "' writes " +
                      std::to_string(upper.back()->outputWidth()) +
                      " values, the layer below " + std::to_string(width));
    // GNMT's residual connections start at the third layer.
    upperResidual.push_back(gnmt && l >= 3);
  }
}

int64_t Model::topWidth() const { return decoder2.outputWidth(); }

std::vector<const float *> Model::upperSources(size_t k, const float *below,
                                               const float *context) const {
  if (upper[k]->numInputs() == 2)
    return {below, context};
  return {below};
}

/// What an upper layer reads of the layer below: `below` itself, or (with
/// --between-layers tanh) tanh of it in `squashed`.
static const float *layerInput(bool squash, const float *below, int64_t n,
                               std::vector<float> &squashed) {
  if (!squash)
    return below;
  squashed.assign(below, below + n);
  tanhInPlace(squashed.data(), n);
  return squashed.data();
}

/// out += below where the layer is residual.
static void addResidual(bool residual, const float *below, int64_t n,
                        float *out) {
  if (residual)
    for (int64_t i = 0; i < n; ++i)
      out[i] += below[i];
}

const float *Model::upperForward(const Batch &batch, bool train) {
  const int64_t N = batch.Ty * batch.B;
  upperOutputs.resize(upper.size());
  upperInputs.resize(upper.size());
  upperTraces.resize(upper.size());
  const bool squash = config.betweenLayers == "tanh";
  const float *below = out2.data();
  for (size_t k = 0; k < upper.size(); ++k) {
    below = layerInput(squash, below, N * topWidth(), upperInputs[k]);
    upperOutputs[k].resize(N * topWidth());
    upper[k]->forward({upperSources(k, below, contexts.data()),
                       batch.tgtLen.data(), batch.Ty, batch.B, {},
                       upperOutputs[k].data()},
                      upperTraces[k], train);
    addResidual(upperResidual[k], below, N * topWidth(),
                upperOutputs[k].data());
    below = upperOutputs[k].data();
  }
  return below;
}

void Model::upperBackward(const Batch &batch, const float *dTop, float *dOut2,
                          float *dContexts) {
  const int64_t N = batch.Ty * batch.B, W = topWidth();
  std::vector<float> dOutput(dTop, dTop + N * W), dBelow;
  for (size_t k = upper.size(); k-- > 0;) {
    // The gradient reaching the layer below: through the cell's input and,
    // for a residual layer, straight through the sum.
    dBelow.assign(N * W, 0.f);
    upper[k]->backward(upperTraces[k], dOutput.data(),
                       {dBelow.data(), dContexts});
    addResidual(upperResidual[k], dOutput.data(), N * W, dBelow.data());
    if (config.betweenLayers == "tanh")
      tanhBackward(upperInputs[k].data(), dBelow.data(), N * W);
    dOutput.swap(dBelow);
  }
  std::copy(dOutput.begin(), dOutput.end(), dOut2);
}

const float *Model::upperStep(const BeamSearch &search, const float *out2,
                              const float *context, int64_t stateRows,
                              UpperStep &step) {
  const int64_t n = search.activeCount(), W = topWidth();
  const bool squash = config.betweenLayers == "tanh";
  step.inputs.resize(upper.size());
  const float *below = out2;
  for (size_t k = 0; k < upper.size(); ++k) {
    below = layerInput(squash, below, n * W, step.inputs[k]);
    const std::vector<int64_t> &widths = upper[k]->stateWidths();
    for (size_t s = 0; s < widths.size(); ++s)
      step.next[k][s].resize(n * widths[s]);
    step.outputs[k].resize(n * W);
    CellStep cellStep{upperSources(k, below, context),
                      n,
                      statePointers<const float>(step.states[k]),
                      stateRows,
                      search.parentRows().data(),
                      statePointers<float>(step.next[k]),
                      step.outputs[k].data()};
    upper[k]->step(cellStep, &step.packed[k]);
    addResidual(upperResidual[k], below, n * W, step.outputs[k].data());
    step.states[k].swap(step.next[k]);
    below = step.outputs[k].data();
  }
  return below;
}

} // namespace nmt
