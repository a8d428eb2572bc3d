//===- models/common/Losses.cpp - Softmax cross-entropy -------------------===//

#include "models/common/Losses.h"

#include "models/common/VectorExp.h"

#include "cellrt/Precision.h"
#include "cellrt/Runtime.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>

namespace models {

// Like Math.cpp, built with -march=native: exp (VectorExp.h) vectorises.

namespace {

/// The largest of x[0, n). Sixteen running maxima, one per lane: a max
/// reduction over one accumulator stays scalar without -ffast-math's
/// no-NaN promise, and this loop is the first of three over every logit.
float rowMax(const float *x, int64_t n) {
  constexpr int64_t kLanes = 16;
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t k = 0; k < kLanes; ++k)
      lanes[k] = x[j + k] > lanes[k] ? x[j + k] : lanes[k];
  float best = *std::max_element(lanes, lanes + kLanes);
  for (; j < n; ++j)
    best = std::max(best, x[j]);
  return best;
}

/// What smoothedCrossEntropyInPlace does to one row, in three passes over
/// it while it is in cache (the row of an 8,000-word vocabulary is 32 KB):
/// its maximum and sum; exp(x - max), summed, into the gradient's row; then
/// the log-probabilities and the gradient together. One exp per logit.
struct RowLoss {
  int64_t V;
  float eps, scale;
  const float *bias;

  /// Returns -log p(target) smoothed by eps: (1 - eps) (-log p(target)) +
  /// eps (-mean log p), computed from the logits' sum (sum log p = sum x -
  /// V shift). `d` (may be null, or `row` itself: then the row becomes the
  /// gradient instead of log-probabilities) gets scale (softmax - q), and
  /// `roundedRow` (may be null) its bf16 rounding.
  double operator()(float *row, int32_t target, float *d,
                    uint16_t *roundedRow = nullptr) const {
#pragma clang fp reassociate(on)
    float sum = 0;
    if (bias) {
      for (int64_t j = 0; j < V; ++j) {
        row[j] += bias[j];
        sum += row[j];
      }
    } else {
      for (int64_t j = 0; j < V; ++j)
        sum += row[j];
    }
    const float best = rowMax(row, V);
    // Read before a gradient in place overwrites it.
    const float targetLogit = row[target];
    float total = 0;
    // In place on a loop of its own: one that might alias would be
    // vectorised only where d and row do not overlap, and summed in
    // another order where they do.
    if (d == row) {
      for (int64_t j = 0; j < V; ++j) {
        row[j] = vectorExp(row[j] - best);
        total += row[j];
      }
    } else if (d) {
      for (int64_t j = 0; j < V; ++j) {
        d[j] = vectorExp(row[j] - best);
        total += d[j];
      }
    } else {
      for (int64_t j = 0; j < V; ++j)
        total += vectorExp(row[j] - best);
    }
    float shift = best + std::log(total);
    if (d != row)
      for (int64_t j = 0; j < V; ++j)
        row[j] -= shift;
    if (d) {
      const float toProbability = scale / total, uniform = scale * eps / V;
      if (roundedRow) {
        for (int64_t j = 0; j < V; ++j) {
          d[j] = d[j] * toProbability - uniform;
          roundedRow[j] = cellrt::roundToBf16(d[j]);
        }
      } else {
        for (int64_t j = 0; j < V; ++j)
          d[j] = d[j] * toProbability - uniform;
      }
      d[target] -= scale * (1 - eps);
      if (roundedRow)
        roundedRow[target] = cellrt::roundToBf16(d[target]);
    }
    // The log-probability row[target] would hold, in the same float.
    double targetLoss = -double(targetLogit - shift);
    if (eps == 0)
      return targetLoss;
    double meanLogProb = (double(sum) - double(V) * shift) / double(V);
    return (1.0 - eps) * targetLoss + eps * -meanLogProb;
  }
};

} // namespace

void logSoftmax(float *logits, int64_t R, int64_t V, const float *bias) {
  // RowLoss without a gradient: the same passes as the training loss.
  const RowLoss rowPass{V, 0.f, 1.f, bias};
  cellrt::parallelFor(R, R * V, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      rowPass(logits + r * V, 0, nullptr);
  });
}

double smoothedCrossEntropyInPlace(float *logits, int64_t rows, int64_t classes,
                                   const int32_t *targets, const uint8_t *mask,
                                   float smoothing, float scale, float *dLogits,
                                   LogitBias bias, uint16_t *roundedDLogits) {
  for (int64_t r = 0; r < rows; ++r)
    if ((!mask || mask[r]) && (targets[r] < 0 || targets[r] >= classes))
      throw std::out_of_range("target " + std::to_string(targets[r]) +
                              " outside " + std::to_string(classes) +
                              " classes");
  const RowLoss rowLoss{classes, smoothing, scale, bias.value};
  std::vector<double> losses(rows, 0.0);
  // Each chunk's bias gradient, added in chunk order: the same sums in
  // every run at a given number of threads.
  const bool biasGrad = bias.grad && dLogits;
  std::mutex partsMutex;
  std::vector<std::pair<int64_t, std::vector<float>>> parts;
  cellrt::parallelFor(rows, rows * classes, [&](int64_t begin, int64_t end) {
    std::vector<float> dBias(biasGrad ? classes : 0, 0.f);
    for (int64_t r = begin; r < end; ++r) {
      float *d = dLogits ? dLogits + r * classes : nullptr;
      uint16_t *rounded =
          d && roundedDLogits ? roundedDLogits + r * classes : nullptr;
      bool counted = !mask || mask[r];
      // A masked row's log-probabilities are still written; its gradient
      // is 0.
      double loss = rowLoss(logits + r * classes, counted ? targets[r] : 0,
                            counted ? d : nullptr, counted ? rounded : nullptr);
      if (counted) {
        losses[r] = loss;
      } else if (d) {
        std::fill(d, d + classes, 0.f);
        if (rounded)
          std::fill(rounded, rounded + classes, uint16_t(0));
      }
      if (counted && biasGrad)
        for (int64_t j = 0; j < classes; ++j)
          dBias[j] += d[j];
    }
    if (!biasGrad)
      return;
    std::lock_guard<std::mutex> lock(partsMutex);
    parts.emplace_back(begin, std::move(dBias));
  });
  std::sort(parts.begin(), parts.end(),
            [](const auto &x, const auto &y) { return x.first < y.first; });
  for (const auto &part : parts)
    for (int64_t j = 0; j < classes; ++j)
      bias.grad[j] += part.second[j];
  // Summed in row order: the same loss for any number of threads.
  double loss = 0;
  for (double value : losses)
    loss += value;
  return loss;
}

double softmaxCrossEntropyInPlace(float *logits, int64_t rows, int64_t classes,
                                  const int32_t *targets, const uint8_t *mask,
                                  float scale, float *dLogits) {
  return smoothedCrossEntropyInPlace(logits, rows, classes, targets, mask, 0.f,
                                     scale, dLogits);
}

double softmaxCrossEntropy(const float *logits, int64_t rows, int64_t classes,
                           const int32_t *targets, const uint8_t *mask,
                           float scale, float *dLogits,
                           std::vector<float> &logProbs) {
  logProbs.assign(logits, logits + rows * classes);
  return softmaxCrossEntropyInPlace(logProbs.data(), rows, classes, targets,
                                    mask, scale, dLogits);
}

std::vector<int32_t> argmaxRows(const float *scores, int64_t rows,
                                int64_t classes) {
  std::vector<int32_t> best(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = scores + r * classes;
    best[r] = int32_t(std::max_element(row, row + classes) - row);
  }
  return best;
}

} // namespace models
