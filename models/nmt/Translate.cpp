//===- models/nmt/Translate.cpp - Beam-search decoding --------------------===//
//
// Decoding runs the two decoder cells through CellLayer::step over the
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

std::vector<std::vector<int32_t>>
Model::translate(const Batch &batch, int64_t beam, int64_t maxLength,
                 float lengthPenalty, std::vector<double> *scores) {
  const int64_t B = batch.B;
  encode(batch, false);
  BeamSearch search(batch, beam, maxLength, lengthPenalty);

  // Each sentence starts from s_0 (first state) and zeros.
  const std::vector<int64_t> &widths = decoder1.stateWidths();
  DecodeStep step;
  step.states.resize(widths.size());
  step.between.resize(widths.size());
  step.next.resize(widths.size());
  step.states[0] = s0;
  for (size_t k = 1; k < widths.size(); ++k)
    step.states[k].assign(B * widths[k], 0.f);
  step.stateRows = B;
  // The decoder cells' weights stay fixed while decoding: stack them once.
  cellrt::PackedWeights packed1 = decoder1.packWeights();
  cellrt::PackedWeights packed2 = decoder2.packWeights();
  // The upper layers start from zeros.
  UpperStep &upperArrays = step.upper;
  upperArrays.states.resize(upper.size());
  upperArrays.next.resize(upper.size());
  upperArrays.outputs.resize(upper.size());
  for (size_t k = 0; k < upper.size(); ++k) {
    for (int64_t width : upper[k]->stateWidths())
      upperArrays.states[k].emplace_back(B * width, 0.f);
    upperArrays.next[k].resize(upper[k]->stateWidths().size());
    upperArrays.packed.push_back(upper[k]->packWeights());
  }
  while (search.nextStep()) {
    decodeStep(search, packed1, packed2, step);
    search.advance(step.readout.logits.data(), config.tgtVocab);
  }
  return search.best(scores);
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
  logSoftmax(step.readout.logits.data(), n, config.tgtVocab);
  step.states.swap(step.next);
  step.stateRows = n;
}

} // namespace nmt
