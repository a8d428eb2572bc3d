//===- models/nmt/Decoder.cpp - The teacher-forced decoder ----------------===//
//
// Training runs the decoder over the reference's previous words: each step
// is cell 1, the attention and cell 2 over a length-1 sequence, with a
// CellTrace and an attention Step per step so that the backward can run
// them again last step first.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/Model.h"

namespace nmt {

/// The gradients of the states around one decoder step.
struct Model::StateGradients {
  /// Of the states after cell 2 (entering), then before cell 1 (leaving).
  States after;
  /// Of the states between the two cells, and before cell 1.
  States between, before;
  std::vector<float> query;
};

void Model::decodeForward(const Batch &batch, bool train) {
  const int64_t B = batch.B, Ty = batch.Ty, N = Ty * B, E = config.emb;
  const int64_t O1 = decoder1.outputWidth(), O2 = decoder2.outputWidth();
  const int64_t C = contextWidth();
  targetEmbedded.resize(N * E);
  targetEmbedding.forward(batch.tgtIn.data(), N, targetEmbedded.data());
  ones.assign(B, 1);
  out1.resize(N * O1);
  contexts.resize(N * C);
  out2.resize(N * O2);
  if (int64_t(traces1.size()) < Ty) {
    traces1.resize(Ty);
    traces2.resize(Ty);
    contextSlots.resize(Ty);
  }
  // Stacked once per batch rather than at each step's call; backward
  // reads them too, and the params do not change before it.
  const cellrt::PackFor purpose =
      train ? cellrt::PackFor::Training : cellrt::PackFor::Inference;
  decoderWeights1 = decoder1.packWeights(purpose);
  decoderWeights2 = decoder2.packWeights(purpose);
  // s_0 for the first state; the others start at zero.
  std::vector<const float *> states = {s0.data()};
  for (int64_t j = 0; j < Ty; ++j) {
    float *query = out1.data() + j * B * O1;
    float *context = contexts.data() + j * B * C;
    float *output = out2.data() + j * B * O2;
    decoder1.forward({{targetEmbedded.data() + j * B * E},
                      ones.data(),
                      1,
                      B,
                      states,
                      query,
                      &decoderWeights1},
                     traces1[j], train);
    contextForward(query, B, nullptr, contextSlots[j], context, train);
    if (attentionRecord && !train)
      recordStepAttention(j, Ty, B);
    decoder2.forward({{context},
                      ones.data(),
                      1,
                      B,
                      traces1[j].finalStatePointers(),
                      output,
                      &decoderWeights2},
                     traces2[j], train);
    states = traces2[j].finalStatePointers();
  }
}

void Model::recordStepAttention(int64_t j, int64_t Ty, int64_t B) {
  const std::vector<float> &alpha = contextSlots[j].attention.alpha;
  const size_t stepSize = size_t(keys.T * B);
  attentionRecord->resize(size_t(Ty) * stepSize);
  std::copy(alpha.begin(), alpha.begin() + stepSize,
            attentionRecord->begin() + j * stepSize);
}

Model::States Model::decodeBackward(const Batch &batch, const float *dOut2,
                                    float *dEmbedded, float *dContexts) {
  const std::vector<int64_t> &widths = decoder1.stateWidths();
  StateGradients grads;
  for (States *states : {&grads.after, &grads.between, &grads.before}) {
    states->resize(widths.size());
    for (size_t k = 0; k < widths.size(); ++k)
      (*states)[k].assign(batch.B * widths[k], 0.f);
  }
  grads.query.resize(batch.B * decoder1.outputWidth());
  // The states after the last step do not reach the loss: `after` starts
  // at zero.
  if (attention)
    dProjectedQueries.resize(out1.size() / decoder1.outputWidth() *
                             attention->attentionWidth());
  for (int64_t j = batch.Ty - 1; j >= 0; --j)
    decodeStepBackward(batch, j, dOut2, dEmbedded, dContexts, grads);
  // All steps' queries at once: one GEMM rather than one per step; and
  // the annotations' gradient through every step's weighted sum.
  if (attention) {
    attention->queryWeightBackward(out1.data(), batch.Ty * batch.B,
                                   dProjectedQueries.data());
    std::vector<const AdditiveAttention::Step *> steps;
    for (int64_t j = 0; j < batch.Ty; ++j)
      steps.push_back(&contextSlots[j].attention);
    attention->annotationsBackward(keys, steps, dContexts, dAnnotations.data());
  }
  return std::move(grads.after);
}

void Model::decodeStepBackward(const Batch &batch, int64_t j,
                               const float *dOut2, float *dEmbedded,
                               float *dContexts, StateGradients &grads) {
  const int64_t B = batch.B, E = config.emb, C = contextWidth();
  const int64_t O1 = decoder1.outputWidth(), O2 = decoder2.outputWidth();
  const int64_t A = attention ? attention->attentionWidth() : 0;
  // Cell 2, then the attention, then cell 1: their gradients accumulate.
  for (States *states : {&grads.between, &grads.before})
    for (std::vector<float> &state : *states)
      std::fill(state.begin(), state.end(), 0.f);
  float *dContext = dContexts + j * B * C;
  decoder2.backward(traces2[j], dOut2 + j * B * O2, {dContext},
                    statePointers<const float>(grads.after),
                    statePointers<float>(grads.between));
  contextBackward(out1.data() + j * B * O1, contextSlots[j], dContext,
                  grads.query.data(), dProjectedQueries.data() + j * B * A);
  std::vector<const float *> dFinal1 =
      statePointers<const float>(grads.between);
  if (breakGradientForTest) // the classic bug: s~_j's state gradient lost
    dFinal1.clear();
  decoder1.backward(traces1[j], grads.query.data(), {dEmbedded + j * B * E},
                    dFinal1, statePointers<float>(grads.before));
  grads.after.swap(grads.before);
}

} // namespace nmt
