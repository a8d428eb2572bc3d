//===- models/common/Crf.cpp - A linear-chain CRF over tags ---------------===//
//
// Scores, lattices and marginals are kept in double: a sentence costs
// O(T K^2) with K = 4 tags, nothing next to the recurrent layers, and double
// keeps log Z and the marginals accurate for long sentences.
//
//===----------------------------------------------------------------------===//

#include "models/common/Crf.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace models {

namespace {

double logSumExp(const double *x, int64_t n) {
  double best = *std::max_element(x, x + n);
  if (std::isinf(best))
    return best;
  double total = 0;
  for (int64_t i = 0; i < n; ++i)
    total += std::exp(x[i] - best);
  return best + std::log(total);
}

} // namespace

struct LinearChainCrf::Sentence {
  const float *emissions; // step t's K scores at emissions + t * stride
  int64_t T, stride;
  std::vector<int32_t> gold; // empty when decoding
  float *dEmissions;         // laid out as emissions, or null

  double emission(int64_t t, int64_t j) const {
    return emissions[t * stride + j];
  }
  /// The emission plus the Hamming cost of tag j at step t.
  double augmented(int64_t t, int64_t j, double cost) const {
    bool wrong = !gold.empty() && gold[t] != j;
    return emission(t, j) + (wrong ? cost : 0.0);
  }
  void requireGold() const {
    if (gold.empty())
      throw std::invalid_argument("a CRF loss needs the gold tags");
  }
};

LinearChainCrf::LinearChainCrf(ParamStore &store, const std::string &name,
                               int64_t numTags)
    : K(numTags) {
  if (numTags < 1)
    throw std::invalid_argument("a CRF needs at least one tag");
  trans = &store.add(name + ".transitions", {K, K});
  first = &store.add(name + ".start", {K});
  last = &store.add(name + ".end", {K});
}

LinearChainCrf::Sentence LinearChainCrf::view(const float *emissions, int64_t T,
                                              int64_t stride,
                                              const int32_t *gold,
                                              int64_t goldStride,
                                              float *dEmissions) const {
  if (T < 1)
    throw std::invalid_argument("a CRF sentence needs at least one step");
  Sentence s{emissions, T, stride, {}, dEmissions};
  if (!gold)
    return s;
  s.gold.resize(T);
  for (int64_t t = 0; t < T; ++t) {
    s.gold[t] = gold[t * goldStride];
    if (s.gold[t] < 0 || s.gold[t] >= K)
      throw std::invalid_argument("CRF tag " + std::to_string(s.gold[t]) +
                                  " outside [0, " + std::to_string(K) + ")");
  }
  return s;
}

LinearChainCrf::Sentence LinearChainCrf::column(const float *emissions,
                                                const int32_t *lengths,
                                                int64_t T, int64_t B, int64_t b,
                                                const int32_t *gold,
                                                float *dEmissions) const {
  if (lengths[b] < 1 || lengths[b] > T)
    throw std::invalid_argument("CRF sentence length " +
                                std::to_string(lengths[b]) + " outside [1, " +
                                std::to_string(T) + "]");
  return view(emissions + b * K, lengths[b], B * K, gold ? gold + b : nullptr,
              B, dEmissions ? dEmissions + b * K : nullptr);
}

double LinearChainCrf::pathScore(const Sentence &s, const int32_t *path) const {
  // The cast keeps the first sum in double too.
  double total = double(first->value[path[0]]) + last->value[path[s.T - 1]];
  for (int64_t t = 0; t < s.T; ++t)
    total += s.emission(t, path[t]);
  for (int64_t t = 1; t < s.T; ++t)
    total += trans->value[path[t - 1] * K + path[t]];
  return total;
}

std::vector<int32_t> LinearChainCrf::bestPath(const Sentence &s,
                                              float hammingCost) const {
  // delta[j]: the best score of a prefix ending in tag j; back[t * K + j]:
  // the tag before j on that prefix.
  std::vector<double> delta(K), next(K);
  std::vector<int32_t> back(s.T * K);
  for (int64_t j = 0; j < K; ++j)
    delta[j] = first->value[j] + s.augmented(0, j, hammingCost);
  for (int64_t t = 1; t < s.T; ++t) {
    for (int64_t j = 0; j < K; ++j) {
      int32_t arg = 0;
      for (int64_t i = 1; i < K; ++i)
        if (delta[i] + trans->value[i * K + j] >
            delta[arg] + trans->value[arg * K + j])
          arg = int32_t(i);
      next[j] = delta[arg] + trans->value[arg * K + j] +
                s.augmented(t, j, hammingCost);
      back[t * K + j] = arg;
    }
    delta.swap(next);
  }
  std::vector<int32_t> path(s.T, 0);
  for (int64_t j = 1; j < K; ++j)
    if (delta[j] + last->value[j] >
        delta[path[s.T - 1]] + last->value[path[s.T - 1]])
      path[s.T - 1] = int32_t(j);
  for (int64_t t = s.T - 1; t > 0; --t)
    path[t - 1] = back[t * K + path[t]];
  return path;
}

void LinearChainCrf::addPathFeatures(const Sentence &s, const int32_t *path,
                                     float sign) const {
  for (int64_t t = 0; t < s.T; ++t)
    s.dEmissions[t * s.stride + path[t]] += sign;
  if (!first->frozen)
    first->grad[path[0]] += sign;
  if (!last->frozen)
    last->grad[path[s.T - 1]] += sign;
  if (!trans->frozen)
    for (int64_t t = 1; t < s.T; ++t)
      trans->grad[path[t - 1] * K + path[t]] += sign;
}

double LinearChainCrf::maxMargin(const Sentence &s, float hammingCost) const {
  s.requireGold();
  std::vector<int32_t> best = bestPath(s, hammingCost);
  if (best == s.gold)
    return 0;
  int64_t wrong = 0;
  for (int64_t t = 0; t < s.T; ++t)
    wrong += best[t] != s.gold[t];
  double loss = pathScore(s, best.data()) + double(hammingCost) * wrong -
                pathScore(s, s.gold.data());
  // Viterbi and pathScore add in different orders: in a near-tie the loss
  // may come out a hair below zero, where the gold path is as good as any.
  if (loss <= 0)
    return 0;
  if (s.dEmissions) {
    addPathFeatures(s, best.data(), 1.f);
    addPathFeatures(s, s.gold.data(), -1.f);
  }
  return loss;
}

void LinearChainCrf::forwardScores(const Sentence &s,
                                   std::vector<double> &alpha) const {
  // alpha[t * K + j] = log of the summed exp scores of prefixes ending in j.
  alpha.assign(s.T * K, 0.0);
  std::vector<double> terms(K);
  for (int64_t j = 0; j < K; ++j)
    alpha[j] = first->value[j] + s.emission(0, j);
  for (int64_t t = 1; t < s.T; ++t)
    for (int64_t j = 0; j < K; ++j) {
      for (int64_t i = 0; i < K; ++i)
        terms[i] = alpha[(t - 1) * K + i] + trans->value[i * K + j];
      alpha[t * K + j] = logSumExp(terms.data(), K) + s.emission(t, j);
    }
}

void LinearChainCrf::backwardScores(const Sentence &s,
                                    std::vector<double> &beta) const {
  // beta[t * K + i] = the same over suffixes following tag i at step t.
  beta.assign(s.T * K, 0.0);
  std::vector<double> terms(K);
  for (int64_t i = 0; i < K; ++i)
    beta[(s.T - 1) * K + i] = last->value[i];
  for (int64_t t = s.T - 2; t >= 0; --t)
    for (int64_t i = 0; i < K; ++i) {
      for (int64_t j = 0; j < K; ++j)
        terms[j] = trans->value[i * K + j] + s.emission(t + 1, j) +
                   beta[(t + 1) * K + j];
      beta[t * K + i] = logSumExp(terms.data(), K);
    }
}

void LinearChainCrf::addMarginals(const Sentence &s,
                                  const std::vector<double> &alpha,
                                  const std::vector<double> &beta,
                                  double logZ) const {
  for (int64_t t = 0; t < s.T; ++t)
    for (int64_t j = 0; j < K; ++j) {
      float p = float(std::exp(alpha[t * K + j] + beta[t * K + j] - logZ));
      s.dEmissions[t * s.stride + j] += p;
      if (t == 0 && !first->frozen)
        first->grad[j] += p;
      if (t == s.T - 1 && !last->frozen)
        last->grad[j] += p;
    }
  if (trans->frozen)
    return;
  for (int64_t t = 1; t < s.T; ++t)
    for (int64_t i = 0; i < K; ++i)
      for (int64_t j = 0; j < K; ++j)
        trans->grad[i * K + j] +=
            float(std::exp(alpha[(t - 1) * K + i] + trans->value[i * K + j] +
                           s.emission(t, j) + beta[t * K + j] - logZ));
}

double LinearChainCrf::nll(const Sentence &s) const {
  s.requireGold();
  std::vector<double> alpha, beta, ends(K);
  forwardScores(s, alpha);
  for (int64_t j = 0; j < K; ++j)
    ends[j] = alpha[(s.T - 1) * K + j] + last->value[j];
  double logZ = logSumExp(ends.data(), K);
  if (s.dEmissions) {
    backwardScores(s, beta);
    addMarginals(s, alpha, beta, logZ);
    addPathFeatures(s, s.gold.data(), -1.f);
  }
  return logZ - pathScore(s, s.gold.data());
}

double LinearChainCrf::score(const float *emissions, int64_t T,
                             const int32_t *tags) const {
  Sentence s = view(emissions, T, K, tags, 1, nullptr);
  return pathScore(s, s.gold.data());
}

std::vector<int32_t> LinearChainCrf::viterbi(const float *emissions,
                                             int64_t T) const {
  return bestPath(view(emissions, T, K, nullptr, 1, nullptr), 0.f);
}

double LinearChainCrf::maxMarginLoss(const float *emissions, int64_t T,
                                     const int32_t *gold, float hammingCost,
                                     float *dEmissions) const {
  return maxMargin(view(emissions, T, K, gold, 1, dEmissions), hammingCost);
}

double LinearChainCrf::negativeLogLikelihood(const float *emissions, int64_t T,
                                             const int32_t *gold,
                                             float *dEmissions) const {
  return nll(view(emissions, T, K, gold, 1, dEmissions));
}

double LinearChainCrf::loss(const float *emissions, const int32_t *lengths,
                            int64_t T, int64_t B, const int32_t *gold,
                            CrfLoss kind, float hammingCost,
                            float *dEmissions) const {
  // Every sentence is checked before the first gradient is accumulated.
  std::vector<Sentence> batch;
  for (int64_t b = 0; b < B; ++b)
    batch.push_back(column(emissions, lengths, T, B, b, gold, dEmissions));
  double total = 0;
  for (const Sentence &s : batch)
    total += kind == CrfLoss::MaxMargin ? maxMargin(s, hammingCost) : nll(s);
  return total;
}

std::vector<std::vector<int32_t>> LinearChainCrf::decode(const float *emissions,
                                                         const int32_t *lengths,
                                                         int64_t T,
                                                         int64_t B) const {
  std::vector<std::vector<int32_t>> paths;
  for (int64_t b = 0; b < B; ++b)
    paths.push_back(
        bestPath(column(emissions, lengths, T, B, b, nullptr, nullptr), 0.f));
  return paths;
}

} // namespace models
