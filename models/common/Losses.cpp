//===- models/common/Losses.cpp - Softmax cross-entropy -------------------===//

#include "models/common/Losses.h"

#include "models/common/Math.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace models {

double softmaxCrossEntropy(const float *logits, int64_t rows, int64_t classes,
                           const int32_t *targets, const uint8_t *mask,
                           float scale, float *dLogits,
                           std::vector<float> &logProbs) {
  for (int64_t r = 0; r < rows; ++r)
    if ((!mask || mask[r]) && (targets[r] < 0 || targets[r] >= classes))
      throw std::out_of_range("target " + std::to_string(targets[r]) +
                              " outside " + std::to_string(classes) +
                              " classes");
  logProbs.assign(logits, logits + rows * classes);
  logSoftmax(logProbs.data(), rows, classes);
  return crossEntropy(logProbs.data(), rows, classes, targets, mask, scale,
                      dLogits);
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
