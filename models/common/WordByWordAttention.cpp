//===- models/common/WordByWordAttention.cpp - Word-by-word attention -----===//

#include "models/common/WordByWordAttention.h"

#include "models/common/Math.h"

#include <algorithm>

namespace models {

WordByWordAttention::WordByWordAttention(ParamStore &store,
                                         const std::string &name, int64_t k)
    : Wy(&store.add(name + ".Wy", {k, k})),
      Wh(&store.add(name + ".Wh", {k, k})),
      Wr(&store.add(name + ".Wr", {k, k})),
      Wt(&store.add(name + ".Wt", {k, k})),
      Wp(&store.add(name + ".Wp", {k, k})),
      Wx(&store.add(name + ".Wx", {k, k})), w(&store.add(name + ".w", {k})) {}

/// Every step attends with keys Wy Y [L, B, k] and one query row per example.
static AttentionShape stepShape(const WordByWordAttention::Cache &cache,
                                int64_t k) {
  return {cache.L, cache.B, k, k, cache.B};
}

/// Row b of `out` [B, k] is row b of `seq` [*, B, k] at time
/// lengths[b] + shift: each example's own last step.
static void gatherLast(const float *seq, const int32_t *lengths, int shift,
                       int64_t B, int64_t k, float *out) {
  for (int64_t b = 0; b < B; ++b)
    std::copy_n(seq + ((lengths[b] + shift) * B + b) * k, k, out + b * k);
}

/// The backward of gatherLast: adds row b of `rows` into `seq`.
static void scatterLast(const float *rows, const int32_t *lengths, int shift,
                        int64_t B, int64_t k, float *seq) {
  for (int64_t b = 0; b < B; ++b) {
    float *to = seq + ((lengths[b] + shift) * B + b) * k;
    for (int64_t j = 0; j < k; ++j)
      to[j] += rows[b * k + j];
  }
}

void WordByWordAttention::bind(Cache &cache, const float *Y,
                               const int32_t *premiseLengths, int64_t L,
                               const float *H, const int32_t *hypothesisLengths,
                               int64_t N, int64_t B) const {
  checkLengths(premiseLengths, B, L, "premise");
  checkLengths(hypothesisLengths, B, N, "hypothesis");
  const int64_t k = width();
  cache.Y = Y;
  cache.H = H;
  cache.premiseLengths = premiseLengths;
  cache.hypothesisLengths = hypothesisLengths;
  cache.L = L;
  cache.N = N;
  cache.B = B;
  cache.WyY.resize(L * B * k);
  cache.Q.resize(N * B * k);
  cache.alpha.resize(N * L * B);
  cache.r.assign((N + 1) * B * k, 0.f); // r_0 = 0
  cache.carry.resize(N * B * k);
  cache.rLast.resize(B * k);
  cache.hLast.resize(B * k);
  cache.hStar.resize(B * k);
}

void WordByWordAttention::forward(const float *Y, const int32_t *premiseLengths,
                                  int64_t L, const float *H,
                                  const int32_t *hypothesisLengths, int64_t N,
                                  int64_t B, Cache &cache, float *hStar) const {
  bind(cache, Y, premiseLengths, L, H, hypothesisLengths, N, B);
  const int64_t k = width();
  // Neither the keys nor the hypothesis half of the queries depend on r:
  // one GEMM each for all steps.
  linear(Y, L * B, k, Wy->value.data(), k, cache.WyY.data(), false);
  linear(H, N * B, k, Wh->value.data(), k, cache.Q.data(), false);
  for (int64_t t = 0; t < N; ++t)
    forwardStep(cache, t);
  output(cache, hStar);
}

void WordByWordAttention::forwardStep(Cache &cache, int64_t t) const {
  const int64_t k = width(), B = cache.B, rows = B * k;
  const float *rPrev = cache.r.data() + t * rows;
  float *q = cache.Q.data() + t * rows, *carry = cache.carry.data() + t * rows;
  float *rNext = cache.r.data() + (t + 1) * rows;
  linear(rPrev, B, k, Wr->value.data(), k, q, true);
  linear(rPrev, B, k, Wt->value.data(), k, carry, false);
  tanhInPlace(carry, rows);
  attentionForward(stepShape(cache, k), cache.Y, cache.WyY.data(),
                   cache.premiseLengths, nullptr, q, w->value.data(),
                   cache.alpha.data() + t * cache.L * B, rNext);
  for (int64_t i = 0; i < rows; ++i)
    rNext[i] += carry[i];
}

void WordByWordAttention::output(Cache &cache, float *hStar) const {
  const int64_t k = width(), B = cache.B;
  // r_t is slot t of cache.r, h_t slot t - 1 of H.
  gatherLast(cache.r.data(), cache.hypothesisLengths, 0, B, k,
             cache.rLast.data());
  gatherLast(cache.H, cache.hypothesisLengths, -1, B, k, cache.hLast.data());
  linear(cache.rLast.data(), B, k, Wp->value.data(), k, hStar, false);
  linear(cache.hLast.data(), B, k, Wx->value.data(), k, hStar, true);
  tanhInPlace(hStar, B * k);
  std::copy_n(hStar, B * k, cache.hStar.data());
}

void WordByWordAttention::backward(const Cache &cache, const float *dHStar,
                                   float *dY, float *dH) const {
  const int64_t k = width(), B = cache.B, L = cache.L, N = cache.N;
  std::vector<float> dPre(B * k), drLast(B * k), dhLast(B * k);
  for (int64_t i = 0; i < B * k; ++i)
    dPre[i] = dHStar[i] * (1 - cache.hStar[i] * cache.hStar[i]);
  linearBackward(cache.rLast.data(), B, k, Wp->value.data(), k, dPre.data(),
                 Wp->grad.data(), drLast.data(), false);
  linearBackward(cache.hLast.data(), B, k, Wx->value.data(), k, dPre.data(),
                 Wx->grad.data(), dhLast.data(), false);
  scatterLast(dhLast.data(), cache.hypothesisLengths, -1, B, k, dH);

  std::vector<float> dr(B * k, 0.f), dQ(N * B * k), dCarry(N * B * k),
      dWyY(L * B * k, 0.f);
  for (int64_t t = N - 1; t >= 0; --t)
    backwardStep(cache, t, drLast.data(), dr.data(), dQ.data(), dCarry.data(),
                 dWyY.data(), dY);
  // The weight gradients of all steps at once; r_0 .. r_{N-1} were the
  // steps' inputs.
  linearBackward(cache.r.data(), N * B, k, Wr->value.data(), k, dQ.data(),
                 Wr->grad.data(), nullptr, false);
  linearBackward(cache.r.data(), N * B, k, Wt->value.data(), k, dCarry.data(),
                 Wt->grad.data(), nullptr, false);
  linearBackward(cache.H, N * B, k, Wh->value.data(), k, dQ.data(),
                 Wh->grad.data(), dH, true);
  linearBackward(cache.Y, L * B, k, Wy->value.data(), k, dWyY.data(),
                 Wy->grad.data(), dY, true);
}

/// On entry dr holds dLoss/dr_t from the later steps; on exit
/// dLoss/dr_{t-1}. Writes step t's rows of dQ and dCarry (the gradient of
/// Wt r_{t-1}, before the tanh).
void WordByWordAttention::backwardStep(const Cache &cache, int64_t t,
                                       const float *drLast, float *dr,
                                       float *dQ, float *dCarry, float *dWyY,
                                       float *dY) const {
  const int64_t k = width(), B = cache.B, rows = B * k;
  // r_t is h*'s input for the examples whose hypothesis ends here.
  for (int64_t b = 0; b < B; ++b)
    if (cache.hypothesisLengths[b] == t + 1)
      for (int64_t j = 0; j < k; ++j)
        dr[b * k + j] += drLast[b * k + j];
  float *dq = dQ + t * rows, *dc = dCarry + t * rows;
  attentionBackward(stepShape(cache, k), cache.Y, cache.WyY.data(),
                    cache.premiseLengths, nullptr, cache.Q.data() + t * rows,
                    w->value.data(), cache.alpha.data() + t * cache.L * B, dr,
                    dY, dWyY, dq, w->grad.data());
  const float *carry = cache.carry.data() + t * rows;
  for (int64_t i = 0; i < rows; ++i)
    dc[i] = dr[i] * (1 - carry[i] * carry[i]);
  // r_{t-1} fed both the query (through Wr) and the carry (through Wt).
  linearBackward(nullptr, B, k, Wr->value.data(), k, dq, nullptr, dr, false);
  linearBackward(nullptr, B, k, Wt->value.data(), k, dc, nullptr, dr, true);
}

} // namespace models
