//===- models/common/Pooling.h - Pooling over time --------------*- C++ -*-===//
//
// Summaries of padded, time-major sequences x [T, B, width] over each
// sequence's valid steps (t < lengths[b]); the NMT decoder's first state
// starts from the mean of the annotations.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_POOLING_H
#define CELLC_MODELS_COMMON_POOLING_H

#include <cstdint>

namespace models {

/// mean[b] = (sum_{t < lengths[b]} x[t, b]) / lengths[b], mean [B, width].
/// Every length must be at least 1.
void meanOverTime(const float *x, const int32_t *lengths, int64_t B,
                  int64_t width, float *mean);
/// Backward: dx[t, b] += dMean[b] / lengths[b] for t < lengths[b]; the
/// padding gets nothing.
void meanOverTimeBackward(const float *dMean, const int32_t *lengths,
                          int64_t B, int64_t width, float *dx);

} // namespace models

#endif
