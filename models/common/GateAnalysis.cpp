//===- models/common/GateAnalysis.cpp - What a cell's gates do ------------===//

#include "models/common/GateAnalysis.h"

#include <algorithm>
#include <cmath>

namespace models {

double pearson(const std::vector<double> &a, const std::vector<double> &b) {
  size_t n = std::min(a.size(), b.size());
  if (n == 0)
    return 0;
  double meanA = 0, meanB = 0;
  for (size_t k = 0; k < n; ++k) {
    meanA += a[k] / double(n);
    meanB += b[k] / double(n);
  }
  double cov = 0, varA = 0, varB = 0;
  for (size_t k = 0; k < n; ++k) {
    cov += (a[k] - meanA) * (b[k] - meanB);
    varA += (a[k] - meanA) * (a[k] - meanA);
    varB += (b[k] - meanB) * (b[k] - meanB);
  }
  if (varA == 0 || varB == 0)
    return 0;
  return cov / std::sqrt(varA * varB);
}

AdditiveWeights::AdditiveWeights(const float *i, const float *f, int64_t T,
                                 int64_t H)
    : i(i), f(f), T(T), H(H) {}

std::vector<double> AdditiveWeights::weight(int64_t t, int64_t k) const {
  std::vector<double> g(H);
  for (int64_t j = 0; j < H; ++j) {
    double product = i[k * H + j];
    for (int64_t l = k + 1; l <= t; ++l)
      product *= f[l * H + j];
    g[j] = product;
  }
  return g;
}

double AdditiveWeights::meanWeight(int64_t t, int64_t k) const {
  double sum = 0;
  for (double g : weight(t, k))
    sum += g;
  return H ? sum / double(H) : 0;
}

std::vector<double> AdditiveWeights::state(int64_t t, const float *p) const {
  std::vector<double> h(H, 0.0);
  for (int64_t k = 0; k <= t; ++k) {
    std::vector<double> g = weight(t, k);
    for (int64_t j = 0; j < H; ++j)
      h[j] += g[j] * p[k * H + j];
  }
  return h;
}

std::vector<std::vector<double>> AdditiveWeights::meanWeights() const {
  // g_k^t = g_k^{t-1} * f_t: each row extends the previous one.
  std::vector<std::vector<double>> means(T);
  std::vector<std::vector<double>> g; // g[k][j] for the current t
  for (int64_t t = 0; t < T; ++t) {
    for (std::vector<double> &weights : g)
      for (int64_t j = 0; j < H; ++j)
        weights[j] *= f[t * H + j];
    g.emplace_back(i + t * H, i + (t + 1) * H);
    for (const std::vector<double> &weights : g) {
      double sum = 0;
      for (double w : weights)
        sum += w;
      means[t].push_back(H ? sum / double(H) : 0);
    }
  }
  return means;
}

std::vector<int64_t> AdditiveWeights::strongestEarlier() const {
  return strongestEarlier(meanWeights());
}

std::vector<int64_t> AdditiveWeights::strongestEarlier(
    const std::vector<std::vector<double>> &meanWeights) {
  std::vector<int64_t> links(meanWeights.size(), -1);
  for (size_t t = 1; t < meanWeights.size(); ++t)
    links[t] = int64_t(std::max_element(meanWeights[t].begin(),
                                        meanWeights[t].begin() + t) -
                       meanWeights[t].begin());
  return links;
}

} // namespace models
