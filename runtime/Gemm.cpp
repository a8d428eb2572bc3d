//===- Gemm.cpp - Matrix products through oneDNN --------------------------===//
//
// oneDNN's dnnl_sgemm picks its kernels from the CPU's features at run time
// and needs no environment settings, unlike OpenBLAS 0.3.21, which has been
// seen to misdetect AVX-512 machines and fall back to its SSE3 kernels.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <dlfcn.h>
#include <string>

using namespace cellrt;

namespace {

/// A product of fewer flops (about 12 µs on one core here) runs on the
/// calling thread alone: waking OpenMP's sleeping threads for it costs more
/// than sharing it saves. A decoding step of B=1 at 2 threads took GRU
/// (products of 0.5-1.6 MFLOP) 307-314 µs and ATR 57-61 with every
/// product shared, 213-216 and 44 alone. At 4 MFLOP LSTM's and LAU's B=1
/// steps (2.1-2.6 MFLOP) lost up to 10%; B=10's (16 MFLOP and up) gain
/// from 2 threads.
constexpr double kMinSharedFlops = 2e6;

/// Sets OpenMP's team size for the products started on this thread until
/// it goes out of scope. The OpenMP runtime is the one oneDNN loaded, found
/// by name, so that cellrt never brings in a second one. Measured with
/// libgomp (Debian's oneDNN); LLVM's libomp re-forms its hot team when the
/// size changes, which may move the threshold.
class OpenMPThreads {
public:
  explicit OpenMPThreads(double flops) {
    static const Api api;
    if (flops >= kMinSharedFlops || !api.set || !api.get)
      return;
    set = api.set;
    saved = api.get();
    if (saved > 1)
      set(1);
  }
  OpenMPThreads(const OpenMPThreads &) = delete;
  OpenMPThreads &operator=(const OpenMPThreads &) = delete;
  ~OpenMPThreads() {
    if (saved > 1)
      set(saved);
  }

private:
  struct Api {
    void (*set)(int) = reinterpret_cast<void (*)(int)>(
        dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    int (*get)() = reinterpret_cast<int (*)()>(
        dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  };
  void (*set)(int) = nullptr;
  int saved = 0;
};

double flopsOf(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) *
         static_cast<double>(k);
}

} // namespace

Status detail::gemmTransposedWeight(int64_t rows, int64_t n, int64_t k,
                                    const float *in, int64_t inStride,
                                    const float *weight, int64_t weightStride,
                                    float *out, int64_t outStride, float beta) {
  if (rows == 0 || n == 0)
    return Status::success();
  // dnnl_sgemm is row-major: C[M,N] = A[M,K] · op(B), op(B) = Bᵀ for 'T'.
  OpenMPThreads threads(flopsOf(rows, n, k));
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

/// Calls dnnl_sgemm (row-major) and turns failures into errors.
static Status product(char transA, char transB, int64_t m, int64_t n,
                      int64_t k, const float *a, int64_t lda, const float *b,
                      int64_t ldb, float *c, int64_t ldc, float beta) {
  if (m == 0 || n == 0 || k == 0)
    return Status::success();
  OpenMPThreads threads(flopsOf(m, n, k));
  dnnl_status_t status =
      dnnl_sgemm(transA, transB, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
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
  return product('N', 'N', rows, n, k, in, inStride, weight, weightStride, out,
                 outStride, 1.0f);
}

Status detail::gemm(int64_t rows, int64_t n, int64_t k, const float *in,
                    int64_t inStride, const float *weight,
                    int64_t weightStride, float *out, int64_t outStride) {
  if (rows > 0 && n > 0 && k == 0)
    for (int64_t r = 0; r < rows; ++r)
      std::fill_n(out + r * outStride, n, 0.0f);
  return product('N', 'N', rows, n, k, in, inStride, weight, weightStride, out,
                 outStride, 0.0f);
}

Status detail::gemmAccumulateTransposedInput(int64_t m, int64_t n, int64_t k,
                                             const float *a, int64_t aStride,
                                             const float *b, int64_t bStride,
                                             float *out, int64_t outStride) {
  return product('T', 'N', m, n, k, a, aStride, b, bStride, out, outStride,
                 1.0f);
}
