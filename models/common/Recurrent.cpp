//===- models/common/Recurrent.cpp - Stacked, bidirectional cells ---------===//

#include "models/common/Recurrent.h"

#include "models/common/Data.h"

#include <algorithm>

namespace models {

SequenceEncoder::SequenceEncoder(const cellrt::Cell &cell,
                                 const std::string &prefix,
                                 const EncoderShape &shape, ParamStore &store)
    : SequenceEncoder(cell, shape, store, [&](int64_t l, int64_t d) {
        return prefix + ".l" + std::to_string(l) + (d == 0 ? ".fwd" : ".bwd");
      }) {}

SequenceEncoder::SequenceEncoder(const cellrt::Cell &cell,
                                 const EncoderShape &shape, ParamStore &store,
                                 const LayerNames &names)
    : squash(shape.squashBetweenLayers) {
  std::vector<LayerDirection> directions = shape.directions;
  if (directions.empty())
    directions.assign(std::max<int64_t>(shape.layers, 0),
                      shape.bidirectional ? LayerDirection::Both
                                          : LayerDirection::Forward);
  if (directions.empty())
    throw DataError(names(0, 0) + ": an encoder needs at least one layer");
  widths.push_back(shape.inputWidth);
  for (size_t l = 0; l < directions.size(); ++l) {
    cells.emplace_back();
    int64_t width = 0;
    for (int64_t d : {0, 1}) {
      if (directions[l] == (d == 0 ? LayerDirection::Backward
                                   : LayerDirection::Forward))
        continue;
      cells[l].push_back(std::make_unique<CellLayer>(
          cell, names(int64_t(l), d), widths.back(), shape.stateSize, store,
          d == 1));
      width += cells[l].back()->outputWidth();
    }
    residual.push_back(shape.residualFrom >= 0 &&
                       int64_t(l) >= shape.residualFrom);
    if (residual.back() && width != widths.back())
      throw DataError(names(int64_t(l), 0) + ": a residual layer needs its "
                      "input width (" + std::to_string(widths.back()) +
                      ") to equal its output width (" +
                      std::to_string(width) + ")");
    widths.push_back(width);
  }
}

CellLayer *SequenceEncoder::lowestCell(bool reverse) {
  for (auto &layerCells : cells)
    for (auto &cell : layerCells)
      if (cell->isReverse() == reverse)
        return cell.get();
  return nullptr;
}

void SequenceEncoder::addValidSteps(const float *from, const int32_t *lengths,
                                    int64_t T, int64_t B, int64_t width,
                                    float *to) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b) {
      if (t >= lengths[b])
        continue;
      int64_t offset = (t * B + b) * width;
      for (int64_t i = 0; i < width; ++i)
        to[offset + i] += from[offset + i];
    }
}

void SequenceEncoder::forward(const float *input, const int32_t *lengths,
                              int64_t T, int64_t B, float *output,
                              Trace &trace, bool train) const {
  trace.input = input;
  trace.lengths = lengths;
  trace.T = T;
  trace.B = B;
  trace.cells.resize(cells.size());
  trace.directionOutputs.resize(cells.size());
  trace.outputs.resize(cells.size());
  trace.squashed.resize(squash ? cells.size() - 1 : 0);
  const float *layerInput = input;
  for (size_t l = 0; l < cells.size(); ++l) {
    size_t directions = cells[l].size();
    trace.cells[l].resize(directions);
    trace.directionOutputs[l].resize(directions);
    for (size_t d = 0; d < directions; ++d) {
      const CellLayer &cell = *cells[l][d];
      std::vector<float> &out = trace.directionOutputs[l][d];
      out.resize(T * B * cell.outputWidth());
      CellSequence sequence;
      sequence.inputs = {layerInput};
      sequence.lengths = lengths;
      sequence.T = T;
      sequence.B = B;
      sequence.output = out.data();
      cell.forward(sequence, trace.cells[l][d], train);
    }
    // Concatenate the directions per position.
    int64_t width = widths[l + 1];
    trace.outputs[l].resize(T * B * width);
    for (int64_t r = 0, offset = 0; r < T * B; ++r, offset = 0)
      for (size_t d = 0; d < directions; ++d) {
        int64_t w = cells[l][d]->outputWidth();
        std::copy_n(trace.directionOutputs[l][d].data() + r * w, w,
                    trace.outputs[l].data() + r * width + offset);
        offset += w;
      }
    if (residual[l])
      addValidSteps(layerInput, lengths, T, B, width, trace.outputs[l].data());
    layerInput = trace.outputs[l].data();
    if (squash && l + 1 < cells.size()) {
      trace.squashed[l] = trace.outputs[l]; // tanh(0) = 0 at padded steps
      tanhInPlace(trace.squashed[l].data(), T * B * width);
      layerInput = trace.squashed[l].data();
    }
  }
  std::copy(trace.outputs.back().begin(), trace.outputs.back().end(), output);
}

void SequenceEncoder::backward(Trace &trace, const float *dOutput,
                               float *dInput) const {
  const int64_t rows = trace.T * trace.B;
  std::vector<float> dLayerOutput(dOutput, dOutput + rows * widths.back());
  for (size_t l = cells.size(); l-- > 0;) {
    std::vector<float> dLayerInput;
    float *target = dInput;
    if (l > 0) {
      dLayerInput.assign(rows * widths[l], 0.f);
      target = dLayerInput.data();
    }
    int64_t offset = 0;
    for (size_t d = 0; d < cells[l].size(); ++d) {
      const CellLayer &cell = *cells[l][d];
      int64_t w = cell.outputWidth(), width = widths[l + 1];
      std::vector<float> dOut(rows * w);
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(dLayerOutput.data() + r * width + offset, w,
                    dOut.data() + r * w);
      offset += w;
      cell.backward(trace.cells[l][d], dOut.data(), {target});
    }
    if (residual[l] && target)
      addValidSteps(dLayerOutput.data(), trace.lengths, trace.T, trace.B,
                    widths[l], target);
    // Layer l read tanh of layer l - 1's output.
    if (squash && l > 0)
      tanhBackward(trace.squashed[l - 1].data(), dLayerInput.data(),
                   rows * widths[l]);
    dLayerOutput = std::move(dLayerInput);
  }
}

} // namespace models
