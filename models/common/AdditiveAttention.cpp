//===- models/common/AdditiveAttention.cpp - Bahdanau attention -----------===//

#include "models/common/AdditiveAttention.h"

#include "models/common/Math.h"

#include <algorithm>
#include <stdexcept>

namespace models {

AdditiveAttention::AdditiveAttention(ParamStore &store, const std::string &name,
                                     int64_t queryWidth, int64_t contextWidth,
                                     int64_t attentionWidth,
                                     const AttentionOptions &options)
    : Wa(&store.add(name + ".Wa", {attentionWidth, queryWidth})),
      Ua(&store.add(name + ".Ua", {attentionWidth, contextWidth})),
      contextScale(options.contextScale) {
  // The key norm's bias replaces b.
  if (!options.layerNorm)
    b = &store.add(name + ".b", {attentionWidth});
  v = &store.add(name + ".v", {attentionWidth});
  if (options.layerNorm) {
    queryNorm = std::make_unique<LayerNorm>(store, name + ".query_norm",
                                            attentionWidth);
    keyNorm =
        std::make_unique<LayerNorm>(store, name + ".key_norm", attentionWidth);
  }
}

void AdditiveAttention::precompute(const float *ann, const int32_t *lengths,
                                   int64_t T, int64_t B, Keys &keys) const {
  checkLengths(lengths, B, T, "annotation");
  const int64_t A = attentionWidth(), C = contextWidth();
  keys.ann = ann;
  keys.lengths = lengths;
  keys.T = T;
  keys.B = B;
  keys.UH.resize(T * B * A);
  std::vector<float> &projected = keyNorm ? keys.rawUH : keys.UH;
  projected.resize(T * B * A);
  linear(ann, T * B, C, Ua->value.data(), A, projected.data(), false);
  if (b)
    addBias(keys.UH.data(), T * B, A, b->value.data());
  if (keyNorm)
    keyNorm->forward(keys.rawUH.data(), T * B, keys.UH.data(), keys.keyStats);
  keys.dUH.clear();
}

/// Whether every row names a sequence of the batch.
static bool rowsNameSequences(const int32_t *row2seq, int64_t R, int64_t B) {
  if (!row2seq)
    return R <= B;
  return std::all_of(row2seq, row2seq + R,
                     [&](int32_t seq) { return seq >= 0 && seq < B; });
}

void AdditiveAttention::attend(const Keys &keys, const float *query, int64_t R,
                               const int32_t *row2seq, Step &step,
                               float *context) const {
  if (!rowsNameSequences(row2seq, R, keys.B))
    throw std::invalid_argument("attention rows name no annotation sequence");
  const int64_t A = attentionWidth();
  step.R = R;
  if (row2seq)
    step.row2seq.assign(row2seq, row2seq + R);
  else
    step.row2seq.clear();
  step.Q.resize(R * A);
  step.alpha.resize(keys.T * R);
  std::vector<float> &projected = queryNorm ? step.rawQ : step.Q;
  projected.resize(R * A);
  linear(query, R, queryWidth(), Wa->value.data(), A, projected.data(), false);
  if (queryNorm)
    queryNorm->forward(step.rawQ.data(), R, step.Q.data(), step.queryStats);
  AttentionShape shape{keys.T, keys.B, contextWidth(), A, R};
  attentionForward(shape, keys.ann, keys.UH.data(), keys.lengths, row2seq,
                   step.Q.data(), v->value.data(), step.alpha.data(), context);
  if (contextScale != 1.f)
    for (int64_t i = 0; i < R * contextWidth(); ++i)
      context[i] *= contextScale;
}

void AdditiveAttention::queryNormBackward(const Step &step, float *dQ) const {
  const int64_t n = step.R * attentionWidth();
  std::vector<float> dNormed(dQ, dQ + n);
  std::fill(dQ, dQ + n, 0.f);
  queryNorm->backward(step.rawQ.data(), step.R, step.queryStats, dNormed.data(),
                      dQ);
}

void AdditiveAttention::backward(Keys &keys, const float *query,
                                 const Step &step, const float *dContext,
                                 float *dAnn, float *dQuery,
                                 bool accumulateDQuery,
                                 float *dProjectedQuery) const {
  const int64_t A = attentionWidth(), R = step.R;
  // Summed over the batch's steps, so that keysBackward runs the key
  // projection's backward once rather than once per step.
  if (keys.dUH.empty())
    keys.dUH.assign(keys.T * keys.B * A, 0.f);
  std::vector<float> ownDQ;
  float *dQ = dProjectedQuery;
  if (!dQ) {
    ownDQ.resize(R * A);
    dQ = ownDQ.data();
  }
  // c = scale * sum(alpha h): every gradient through it scales alike.
  std::vector<float> scaled;
  if (contextScale != 1.f) {
    scaled.assign(dContext, dContext + R * contextWidth());
    for (float &value : scaled)
      value *= contextScale;
    dContext = scaled.data();
  }
  AttentionShape shape{keys.T, keys.B, contextWidth(), A, R};
  attentionBackward(shape, keys.ann, keys.UH.data(), keys.lengths,
                    step.row2seq.empty() ? nullptr : step.row2seq.data(),
                    step.Q.data(), v->value.data(), step.alpha.data(), dContext,
                    dAnn, keys.dUH.data(), dQ, v->grad.data());
  if (queryNorm)
    queryNormBackward(step, dQ);
  float *dWa = dProjectedQuery ? nullptr : Wa->grad.data();
  linearBackward(query, R, queryWidth(), Wa->value.data(), A, dQ, dWa, dQuery,
                 accumulateDQuery);
}

void AdditiveAttention::annotationsBackward(
    const Keys &keys, const std::vector<const Step *> &steps,
    const float *dContexts, float *dAnn) const {
  std::vector<const float *> alphas;
  for (const Step *step : steps) {
    if (step->R != keys.B || !step->row2seq.empty())
      throw std::invalid_argument(
          "annotationsBackward: steps whose rows are the sequences only");
    alphas.push_back(step->alpha.data());
  }
  AttentionShape shape{keys.T, keys.B, contextWidth(), attentionWidth(),
                       keys.B};
  attentionAnnotationsBackward(shape, keys.lengths, alphas, dContexts,
                               contextScale, dAnn);
}

void AdditiveAttention::keysBackward(Keys &keys, float *dAnn) const {
  if (keys.dUH.empty()) // no backward() since precompute
    return;
  const int64_t rows = keys.T * keys.B, A = attentionWidth();
  if (b)
    biasBackward(keys.dUH.data(), rows, A, b->grad.data());
  if (keyNorm) {
    std::vector<float> dRaw(rows * A, 0.f);
    keyNorm->backward(keys.rawUH.data(), rows, keys.keyStats, keys.dUH.data(),
                      dRaw.data());
    keys.dUH.swap(dRaw);
  }
  linearBackward(keys.ann, rows, contextWidth(), Ua->value.data(), A,
                 keys.dUH.data(), Ua->grad.data(), dAnn, true);
  keys.dUH.clear();
}

void AdditiveAttention::queryWeightBackward(const float *queries, int64_t rows,
                                            const float *dProjected) const {
  linearBackward(queries, rows, queryWidth(), Wa->value.data(),
                 attentionWidth(), dProjected, Wa->grad.data(), nullptr, false);
}

} // namespace models
