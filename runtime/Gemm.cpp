//===- Gemm.cpp - Matrix products through oneDNN --------------------------===//
//
// oneDNN's dnnl_sgemm picks its kernels from the CPU's features at run time
// and needs no environment settings, unlike OpenBLAS 0.3.21, which has been
// seen to misdetect AVX-512 machines and fall back to its SSE3 kernels.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

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

/// The same for a product by a weight packed for oneDNN's matmul, which
/// gains less from a second thread: at a B=10 step on 2 threads GRU's
/// products (5-16 MFLOP) took 420-436 µs shared and 350 alone, LSTM's (21
/// MFLOP) 448-479 shared and 552 alone.
constexpr double kMinSharedPackedFlops = 16e6;

/// Sets OpenMP's team size for the products started on this thread until
/// it goes out of scope. The OpenMP runtime is the one oneDNN loaded, found
/// by name, so that cellrt never brings in a second one. Measured with
/// libgomp (Debian's oneDNN); LLVM's libomp re-forms its hot team when the
/// size changes, which may move the threshold.
class OpenMPThreads {
public:
  explicit OpenMPThreads(double flops, double minShared = kMinSharedFlops) {
    static const Api api;
    if (flops >= minShared || !api.set || !api.get)
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

Status detail::gemmAccumulateTransposedInput(int64_t m, int64_t n, int64_t k,
                                             const float *a, int64_t aStride,
                                             const float *b, int64_t bStride,
                                             float *out, int64_t outStride) {
  return product('T', 'N', m, n, k, a, aStride, b, bStride, out, outStride,
                 1.0f);
}

namespace {
dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::desc rowMajor(int64_t rows, int64_t columns, int64_t stride) {
  return dnnl::memory::desc({rows, columns}, dnnl::memory::data_type::f32,
                            dnnl::memory::dims{stride, 1});
}

std::string describe(const dnnl::error &error) {
  return std::string(error.what()) + " (status " +
         std::to_string(static_cast<int>(error.status)) + ")";
}
} // namespace

/// A matmul for one row count and pair of strides, or none where oneDNN
/// would want the weight in another layout.
struct PackedMatmul {
  std::optional<dnnl::matmul> primitive;
  dnnl::memory::desc scratchpad;
};

static std::atomic<int64_t> packedWeights{0}, packedMultiplies{0};

int64_t PackedProduct::packedSoFar() { return packedWeights.load(); }

int64_t PackedProduct::multipliedSoFar() { return packedMultiplies.load(); }

struct PackedProduct::Impl {
  dnnl::memory packed;
  mutable std::mutex mutex;
  /// By (rows, in stride, out stride).
  mutable std::map<std::tuple<int64_t, int64_t, int64_t>, PackedMatmul> matmuls;
};

PackedProduct::PackedProduct(std::unique_ptr<Impl> impl, int64_t n, int64_t k)
    : impl(std::move(impl)), columns(n), depth(k) {}

PackedProduct::~PackedProduct() = default;

/// The matmul of `rows` rows into the weight's packed layout. The caller
/// gives each execution its own scratchpad: a primitive with the library's
/// scratchpad may run only on the thread that made it, and PackedWeights
/// are shared across threads.
static dnnl::matmul::primitive_desc matmulFor(int64_t rows, int64_t n,
                                              int64_t k, int64_t inStride,
                                              int64_t outStride) {
  dnnl::memory::desc weights({k, n}, dnnl::memory::data_type::f32,
                             dnnl::memory::format_tag::any);
  dnnl::primitive_attr attributes;
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(rowMajor(rows, k, inStride), weights,
                         rowMajor(rows, n, outStride)),
      attributes, cpuEngine());
}

std::unique_ptr<PackedProduct> PackedProduct::pack(const float *weight,
                                                   int64_t n, int64_t k,
                                                   std::string &error) {
  try {
    // The layout oneDNN prefers for dense rows was the same for every row
    // count tried (1-256); 16 stands for them, and a shape that wants
    // another one (rows wider than the operands, here) is refused
    // (accepts()).
    dnnl::matmul::primitive_desc desc = matmulFor(16, n, k, k, n);
    auto impl = std::make_unique<Impl>();
    impl->packed = dnnl::memory(desc.weights_desc(), cpuEngine());
    // weight [n, k] row-major is the [k, n] matrix in layout ba.
    dnnl::memory plain(
        {{k, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ba},
        cpuEngine(), const_cast<float *>(weight));
    dnnl::stream stream(cpuEngine());
    dnnl::reorder(plain, impl->packed).execute(stream, plain, impl->packed);
    stream.wait();
    packedWeights.fetch_add(1);
    return std::unique_ptr<PackedProduct>(
        new PackedProduct(std::move(impl), n, k));
  } catch (const dnnl::error &failure) {
    error = "packing a [" + std::to_string(n) + ", " + std::to_string(k) +
            "] weight for oneDNN's matmul failed: " + describe(failure);
    return nullptr;
  }
}

/// The cached matmul for the shape, made on first use (under the lock).
static const PackedMatmul &
matmulOf(const dnnl::memory &packed, int64_t rows, int64_t columns,
         int64_t depth, int64_t inStride, int64_t outStride,
         std::map<std::tuple<int64_t, int64_t, int64_t>, PackedMatmul> &cache) {
  auto key = std::make_tuple(rows, inStride, outStride);
  auto found = cache.find(key);
  if (found != cache.end())
    return found->second;
  PackedMatmul made;
  dnnl::matmul::primitive_desc desc =
      matmulFor(rows, columns, depth, inStride, outStride);
  if (desc.weights_desc() == packed.get_desc()) {
    made.primitive.emplace(desc);
    made.scratchpad = desc.scratchpad_desc();
  }
  return cache.emplace(key, std::move(made)).first->second;
}

bool PackedProduct::accepts(int64_t rows, int64_t inStride,
                            int64_t outStride) const {
  try {
    std::lock_guard<std::mutex> lock(impl->mutex);
    return matmulOf(impl->packed, rows, columns, depth, inStride, outStride,
                    impl->matmuls)
        .primitive.has_value();
  } catch (const dnnl::error &) {
    return false;
  }
}

Status PackedProduct::multiply(int64_t rows, const float *in, int64_t inStride,
                               float *out, int64_t outStride) const {
  if (rows == 0)
    return Status::success();
  try {
    PackedMatmul matmul;
    {
      std::lock_guard<std::mutex> lock(impl->mutex);
      matmul = matmulOf(impl->packed, rows, columns, depth, inStride, outStride,
                        impl->matmuls);
    }
    if (!matmul.primitive)
      return Status::error("oneDNN's matmul of " + std::to_string(rows) +
                           " rows wants the weight in another layout");
    // Each thread's executions take turns with its own scratchpad.
    thread_local std::vector<char> scratch;
    scratch.resize(
        std::max<size_t>(scratch.size(), matmul.scratchpad.get_size()));
    OpenMPThreads threads(flopsOf(rows, columns, depth), kMinSharedPackedFlops);
    dnnl::memory source(rowMajor(rows, depth, inStride), cpuEngine(),
                        const_cast<float *>(in));
    dnnl::memory target(rowMajor(rows, columns, outStride), cpuEngine(), out);
    dnnl::memory scratchpad(matmul.scratchpad, cpuEngine(), scratch.data());
    dnnl::stream stream(cpuEngine());
    matmul.primitive->execute(stream, {{DNNL_ARG_SRC, source},
                                       {DNNL_ARG_WEIGHTS, impl->packed},
                                       {DNNL_ARG_DST, target},
                                       {DNNL_ARG_SCRATCHPAD, scratchpad}});
    stream.wait();
    packedMultiplies.fetch_add(1);
    return Status::success();
  } catch (const dnnl::error &failure) {
    return Status::error(
        "oneDNN's matmul of [" + std::to_string(rows) + ", " +
        std::to_string(depth) + "] by a packed [" + std::to_string(columns) +
        ", " + std::to_string(depth) + "] weight failed: " + describe(failure));
  }
}
