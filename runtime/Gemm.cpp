//===- Gemm.cpp - Matrix products through oneDNN --------------------------===//
//
// oneDNN's dnnl_sgemm picks its kernels from the CPU's features at run time
// and needs no environment settings, unlike OpenBLAS 0.3.21, which has been
// seen to misdetect AVX-512 machines and fall back to its SSE3 kernels.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <string>

using namespace cellrt;

Status detail::gemmTransposedWeight(int64_t rows, int64_t n, int64_t k,
                                    const float *in, int64_t inStride,
                                    const float *weight, int64_t weightStride,
                                    float *out, int64_t outStride, float beta) {
  if (rows == 0 || n == 0)
    return Status::success();
  // dnnl_sgemm is row-major: C[M,N] = A[M,K] · op(B), op(B) = Bᵀ for 'T'.
  dnnl_status_t status = dnnl_sgemm('N', 'T', rows, n, k, 1.0f, in, inStride,
                                    weight, weightStride, beta, out, outStride);
  if (status != dnnl_success)
    return Status::error("dnnl_sgemm failed (status " +
                         std::to_string(static_cast<int>(status)) +
                         ") for a [" + std::to_string(rows) + ", " +
                         std::to_string(k) + "] x [" + std::to_string(n) +
                         ", " + std::to_string(k) + "]^T product");
  return Status::success();
}

/// Calls dnnl_sgemm (row-major) with beta = 1 and turns failures into errors.
static Status accumulate(char transA, char transB, int64_t m, int64_t n,
                         int64_t k, const float *a, int64_t lda, const float *b,
                         int64_t ldb, float *c, int64_t ldc) {
  if (m == 0 || n == 0 || k == 0)
    return Status::success();
  dnnl_status_t status =
      dnnl_sgemm(transA, transB, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
  if (status != dnnl_success)
    return Status::error("dnnl_sgemm failed (status " +
                         std::to_string(static_cast<int>(status)) + ") for a " +
                         (transA == 'T' ? "transposed " : "") + "[" +
                         std::to_string(m) + ", " + std::to_string(k) +
                         "] x [" + std::to_string(k) + ", " +
                         std::to_string(n) + "] product");
  return Status::success();
}

Status detail::gemmAccumulate(int64_t rows, int64_t n, int64_t k,
                              const float *in, int64_t inStride,
                              const float *weight, int64_t weightStride,
                              float *out, int64_t outStride) {
  return accumulate('N', 'N', rows, n, k, in, inStride, weight, weightStride,
                    out, outStride);
}

Status detail::gemmAccumulateTransposedInput(int64_t m, int64_t n, int64_t k,
                                             const float *a, int64_t aStride,
                                             const float *b, int64_t bStride,
                                             float *out, int64_t outStride) {
  return accumulate('T', 'N', m, n, k, a, aStride, b, bStride, out, outStride);
}
