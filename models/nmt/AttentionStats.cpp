//===- models/nmt/AttentionStats.cpp - Where the attention looks ----------===//

#include "models/nmt/AttentionStats.h"

#include <algorithm>
#include <cmath>

namespace nmt {

void AttentionStats::add(
    const std::vector<float> &alpha, int64_t Ty, int64_t Tx,
    const std::vector<int32_t> &srcLen, const std::vector<int32_t> &tgtLen,
    const std::vector<std::vector<std::string>> &sourceWords,
    const std::vector<std::vector<std::string>> &targetWords) {
  const int64_t B = int64_t(srcLen.size());
  std::vector<double> weights;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t sourceLength = std::min<int64_t>(srcLen[b], Tx);
    const int64_t targetLength = std::min<int64_t>(tgtLen[b], Ty);
    // Only the first `keep` sentences' matrices are kept (validation keeps
    // none): the others' rows are summed and dropped.
    const bool keeping = int64_t(kept.size()) < keep;
    Example example;
    for (int64_t j = 0; j < targetLength; ++j) {
      weights.resize(sourceLength);
      for (int64_t t = 0; t < sourceLength; ++t)
        weights[t] = alpha[(j * Tx + t) * B + b];
      addStep(weights, j, targetLength);
      if (keeping)
        example.weights.push_back(weights);
    }
    if (!keeping)
      continue;
    if (size_t(b) < sourceWords.size())
      example.source = sourceWords[b];
    if (size_t(b) < targetWords.size())
      example.target = targetWords[b];
    kept.push_back(std::move(example));
  }
}

void AttentionStats::addStep(const std::vector<double> &weights, int64_t j,
                             int64_t Ty) {
  const int64_t Tx = int64_t(weights.size());
  if (Tx == 0)
    return;
  double entropy = 0;
  for (double w : weights)
    if (w > 0)
      entropy -= w * std::log(w);
  int64_t argmax =
      std::max_element(weights.begin(), weights.end()) - weights.begin();
  ++count;
  sums.entropy += entropy;
  // One source word: every weighting is that word, entropy 0 of 0.
  sums.normalizedEntropy += Tx > 1 ? entropy / std::log(double(Tx)) : 0.0;
  sums.maxWeight += weights[argmax];
  sums.onLastWord += weights.back();
  double sourceSpot = Tx > 1 ? double(argmax) / double(Tx - 1) : 0.0;
  double targetSpot = Ty > 1 ? double(j) / double(Ty - 1) : 0.0;
  sums.diagonalDistance += std::abs(sourceSpot - targetSpot);
}

} // namespace nmt
