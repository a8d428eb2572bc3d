//===- models/nmt/Translate.cpp - Beam-search decoding --------------------===//
//
// Decoding (Model::StepDecoder, driven by a BeamSearch: Ensemble.h) runs
// the two decoder cells through CellLayer::step over the
// beam's live rows only: each row starts from its parent's states (the
// previous step's packed rows) and attends over its own sentence.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/BeamSearch.h"
#include "models/nmt/Model.h"

#include "models/common/Losses.h"

#include <algorithm>

namespace nmt {

/// The arrays of one decoding step, reused from step to step.
struct Model::DecodeStep {
  /// The states before the step (with `stateRows` rows), between the two
  /// cells and after the step.
  States states, between, next;
  int64_t stateRows = 0;
  std::vector<float> embedded, out1, context, out2;
  ContextSlot contextSlot;
  UpperStep upper;
  Readout readout;
};

class Model::StepDecoder : public IncrementalDecoder {
public:
  StepDecoder(Model &model, int64_t B);
  const float *step(const BeamSearch &search) override {
    model.decodeStep(search, packed1, packed2, arrays);
    return arrays.readout.logits.data();
  }

private:
  Model &model;
  DecodeStep arrays;
  // The decoder cells' weights stay fixed while decoding: stacked once.
  cellrt::PackedWeights packed1, packed2;
};

std::unique_ptr<IncrementalDecoder> Model::startDecoding(const Batch &batch) {
  encode(batch, false);
  return std::make_unique<StepDecoder>(*this, batch.B);
}

Model::StepDecoder::StepDecoder(Model &model, int64_t B)
    : model(model), packed1(model.decoder1.packWeights()),
      packed2(model.decoder2.packWeights()) {
  // Each sentence starts from s_0 (first state) and zeros.
  const std::vector<int64_t> &widths = model.decoder1.stateWidths();
  DecodeStep &step = arrays;
  step.states.resize(widths.size());
  step.between.resize(widths.size());
  step.next.resize(widths.size());
  step.states[0] = model.s0;
  for (size_t k = 1; k < widths.size(); ++k)
    step.states[k].assign(B * widths[k], 0.f);
  step.stateRows = B;
  // The upper layers start from zeros.
  UpperStep &upperArrays = step.upper;
  const auto &upper = model.upper;
  upperArrays.states.resize(upper.size());
  upperArrays.next.resize(upper.size());
  upperArrays.outputs.resize(upper.size());
  for (size_t k = 0; k < upper.size(); ++k) {
    for (int64_t width : upper[k]->stateWidths())
      upperArrays.states[k].emplace_back(B * width, 0.f);
    upperArrays.next[k].resize(upper[k]->stateWidths().size());
    upperArrays.packed.push_back(upper[k]->packWeights());
  }
}

void Model::decodeStep(const BeamSearch &search,
                       const cellrt::PackedWeights &packed1,
                       const cellrt::PackedWeights &packed2, DecodeStep &step) {
  const int64_t n = search.activeCount(), E = config.emb;
  const std::vector<int64_t> &widths = decoder1.stateWidths();
  for (size_t k = 0; k < widths.size(); ++k) {
    step.between[k].resize(n * widths[k]);
    step.next[k].resize(n * widths[k]);
  }
  step.embedded.resize(n * E);
  targetEmbedding.forward(search.previousWords().data(), n,
                          step.embedded.data());
  step.out1.resize(n * decoder1.outputWidth());
  CellStep first{{step.embedded.data()},
                 n,
                 statePointers<const float>(step.states),
                 step.stateRows,
                 search.parentRows().data(),
                 statePointers<float>(step.between),
                 step.out1.data()};
  decoder1.step(first, &packed1);
  step.context.resize(n * contextWidth());
  contextForward(step.out1.data(), n, search.sentences().data(),
                 step.contextSlot, step.context.data(), false);
  step.out2.resize(n * decoder2.outputWidth());
  CellStep second{{step.context.data()},
                  n,
                  statePointers<const float>(step.between),
                  n,
                  nullptr,
                  statePointers<float>(step.next),
                  step.out2.data()};
  decoder2.step(second, &packed2);
  const float *top = upperStep(search, step.out2.data(), step.context.data(),
                               step.stateRows, step.upper);
  readoutForward(top, step.embedded.data(), step.context.data(), n, nullptr,
                 step.readout);
  logSoftmax(step.readout.logits.data(), n, config.tgtVocab,
             outputBiasOf(output).value);
  step.states.swap(step.next);
  step.stateRows = n;
}

} // namespace nmt
