//===- models/common/Losses.cpp - Softmax cross-entropy -------------------===//

#include "models/common/Losses.h"

#include "cellrt/Runtime.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace models {

// Like Math.cpp, built with libmvec and -march=native: exp vectorises.

void logSoftmax(float *logits, int64_t R, int64_t V) {
  cellrt::parallelFor(R, R * V, [&](int64_t begin, int64_t end) {
#pragma clang fp reassociate(on)
    for (int64_t r = begin; r < end; ++r) {
      float *row = logits + r * V;
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < V; ++j)
        best = std::max(best, row[j]);
      float total = 0;
      for (int64_t j = 0; j < V; ++j)
        total += std::exp(row[j] - best);
      float shift = best + std::log(total);
      for (int64_t j = 0; j < V; ++j)
        row[j] -= shift;
    }
  });
}

/// -log p(target) smoothed by eps (smoothedCrossEntropyInPlace) of one row
/// of log-probabilities; eps = 0: -row[target] exactly.
static double smoothedRowLoss(const float *row, int64_t V, int32_t target,
                              float eps) {
  if (eps == 0)
    return -row[target];
  double sum = 0;
  for (int64_t j = 0; j < V; ++j)
    sum += row[j];
  return (1.0 - eps) * -double(row[target]) + eps * (-sum / double(V));
}

/// Cross-entropy from log-probs [R, V] against targets smoothed by eps
/// (rows with mask[r] == 0 are skipped); returns the summed loss and writes
/// dLogits = scale * (softmax - q), q = (1 - eps) onehot + eps / V, for
/// unmasked rows, 0 otherwise.
static double crossEntropy(const float *logProbs, int64_t R, int64_t V,
                           const int32_t *targets, const uint8_t *mask,
                           float eps, float scale, float *dLogits) {
  const float uniform = eps / float(V), onTarget = scale * (1 - eps);
  std::vector<double> rowLoss(R, 0.0);
  cellrt::parallelFor(R, R * V, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      float *d = dLogits ? dLogits + r * V : nullptr;
      if (mask && !mask[r]) {
        if (d)
          std::fill(d, d + V, 0.f);
        continue;
      }
      const float *row = logProbs + r * V;
      rowLoss[r] = smoothedRowLoss(row, V, targets[r], eps);
      if (!d)
        continue;
      for (int64_t j = 0; j < V; ++j)
        d[j] = scale * (std::exp(row[j]) - uniform);
      d[targets[r]] -= onTarget;
    }
  });
  // Summed in row order: the same loss for any number of threads.
  double loss = 0;
  for (double value : rowLoss)
    loss += value;
  return loss;
}

double smoothedCrossEntropyInPlace(float *logits, int64_t rows, int64_t classes,
                                   const int32_t *targets, const uint8_t *mask,
                                   float smoothing, float scale,
                                   float *dLogits) {
  for (int64_t r = 0; r < rows; ++r)
    if ((!mask || mask[r]) && (targets[r] < 0 || targets[r] >= classes))
      throw std::out_of_range("target " + std::to_string(targets[r]) +
                              " outside " + std::to_string(classes) +
                              " classes");
  logSoftmax(logits, rows, classes);
  return crossEntropy(logits, rows, classes, targets, mask, smoothing, scale,
                      dLogits);
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
