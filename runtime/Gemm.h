//===- Gemm.h - Matrix products for the executor ----------------*- C++ -*-===//
//
// The one GEMM shape a plan needs, behind a function so the backend (oneDNN
// today) can change without touching the executor.
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

} // namespace detail
} // namespace cellrt

#endif // CELLRT_GEMM_H
