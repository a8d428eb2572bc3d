//===- models/common/Pooling.cpp - Pooling over time ----------------------===//

#include "models/common/Pooling.h"

#include <algorithm>

namespace models {

void meanOverTime(const float *x, const int32_t *lengths, int64_t B,
                  int64_t width, float *mean) {
  // Sum, then divide once: one rounding less per value than dividing each
  // term.
  std::fill(mean, mean + B * width, 0.f);
  for (int64_t b = 0; b < B; ++b) {
    float *out = mean + b * width;
    for (int64_t t = 0; t < lengths[b]; ++t)
      for (int64_t j = 0; j < width; ++j)
        out[j] += x[(t * B + b) * width + j];
    for (int64_t j = 0; j < width; ++j)
      out[j] /= float(lengths[b]);
  }
}

void meanOverTimeBackward(const float *dMean, const int32_t *lengths,
                          int64_t B, int64_t width, float *dx) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < lengths[b]; ++t)
      for (int64_t j = 0; j < width; ++j)
        dx[(t * B + b) * width + j] += dMean[b * width + j] / float(lengths[b]);
}

} // namespace models
