//===- Gemm.h - Matrix products for the executor ----------------*- C++ -*-===//
//
// The GEMM shapes a plan needs (forward, backward and weight gradients), behind
// a function so the backend (oneDNN today) can change without touching the
// executor.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_GEMM_H
#define CELLRT_GEMM_H

#include "cellrt/Plan.h"

#include <cstdint>

namespace cellrt {
namespace detail {

/// out[rows, n] = beta * out + in[rows, k] · weight[n, k]ᵀ, all row-major with
/// the given row strides (in floats). beta is 0 (overwrite) or 1 (accumulate).
Status gemmTransposedWeight(int64_t rows, int64_t n, int64_t k, const float *in,
                            int64_t inStride, const float *weight,
                            int64_t weightStride, float *out, int64_t outStride,
                            float beta = 0.0f);

/// out[rows, n] += in[rows, k] · weight[k, n] (the backward direction of
/// gemmTransposedWeight), all row-major with the given row strides.
Status gemmAccumulate(int64_t rows, int64_t n, int64_t k, const float *in,
                      int64_t inStride, const float *weight,
                      int64_t weightStride, float *out, int64_t outStride);

/// out[rows, n] = in[rows, k] · weight[k, n]: gemmTransposedWeight's
/// product with the weight kept transposed, which oneDNN reads without
/// packing it first (a product of few rows: 2.3x faster at 10 rows).
Status gemm(int64_t rows, int64_t n, int64_t k, const float *in,
            int64_t inStride, const float *weight, int64_t weightStride,
            float *out, int64_t outStride);

/// out[m, n] += a[k, m]ᵀ · b[k, n] (a weight gradient: k runs over the
/// T*B rows), all row-major with the given row strides.
Status gemmAccumulateTransposedInput(int64_t m, int64_t n, int64_t k,
                                     const float *a, int64_t aStride,
                                     const float *b, int64_t bStride,
                                     float *out, int64_t outStride);

} // namespace detail
} // namespace cellrt

#endif // CELLRT_GEMM_H
