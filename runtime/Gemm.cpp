//===- Gemm.cpp - Matrix products through oneDNN --------------------------===//
//
// oneDNN's dnnl_sgemm picks its kernels from the CPU's features at run time
// and needs no environment settings, unlike OpenBLAS 0.3.21, which has been
// seen to misdetect AVX-512 machines and fall back to its SSE3 kernels.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "OneDnn.h"
#include "cellrt/Runtime.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

using namespace cellrt;
using namespace cellrt::detail;

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

Status cellrt::multiply(Precision precision, bool transposeA, bool transposeB,
                        int64_t m, int64_t n, int64_t k, const float *a,
                        int64_t aStride, const float *b, int64_t bStride,
                        float beta, float *out, int64_t outStride) {
  if (beta != 0.0f && beta != 1.0f)
    return Status::error("cellrt::multiply: beta must be 0 or 1, got " +
                         std::to_string(beta));
  // An empty sum still zeroes the output where beta is 0, which product()
  // skips and gemmBf16 does without multiplying.
  if (precision == Precision::BF16 || k == 0)
    return gemmBf16(transposeA, transposeB, m, n, k, a, aStride, b, bStride,
                    out, outStride, beta);
  return product(transposeA ? 'T' : 'N', transposeB ? 'T' : 'N', m, n, k, a,
                 aStride, b, bStride, out, outStride, beta);
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
  Precision precision = Precision::F32;
  Use use = Use::Forward;
  mutable std::mutex mutex;
  /// By (rows, in stride, out stride, team size).
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, int>, PackedMatmul>
      matmuls;

  const PackedMatmul &matmulOf(int64_t rows, int64_t n, int64_t k,
                               int64_t inStride, int64_t outStride) const;
  /// A copy of the matmul a product of these rows runs (matmulOf for the
  /// strides it multiplies at), looked up under the lock.
  PackedMatmul lookup(int64_t rows, int64_t n, int64_t k, int64_t inStride,
                      int64_t outStride) const;
};

PackedProduct::PackedProduct(std::unique_ptr<Impl> impl, int64_t n, int64_t k)
    : impl(std::move(impl)), columns(n), depth(k) {}

PackedProduct::~PackedProduct() = default;

Precision PackedProduct::precision() const { return impl->precision; }

PackedProduct::Use PackedProduct::use() const { return impl->use; }

/// The widths of a product's input and output rows by a weight [n, k].
static int64_t inputWidth(PackedProduct::Use use, int64_t n, int64_t k) {
  return use == PackedProduct::Use::Forward ? k : n;
}

static int64_t outputWidth(PackedProduct::Use use, int64_t n, int64_t k) {
  return use == PackedProduct::Use::Forward ? n : k;
}

static dnnl::memory::data_type typeOf(Precision precision) {
  return precision == Precision::BF16 ? dnnl::memory::data_type::bf16
                                      : dnnl::memory::data_type::f32;
}

/// The matmul of `rows` rows into the weight's packed layout. The caller
/// gives each execution its own scratchpad: a primitive with the library's
/// scratchpad may run only on the thread that made it, and PackedWeights
/// are shared across threads. In bf16 the input is the rows' rounded copy.
/// The backward product adds to its output (a sum post-op).
static dnnl::matmul::primitive_desc
matmulFor(int64_t rows, int64_t n, int64_t k, int64_t inStride,
          int64_t outStride, Precision precision, PackedProduct::Use use) {
  int64_t in = inputWidth(use, n, k), out = outputWidth(use, n, k);
  dnnl::memory::desc weights({in, out}, typeOf(precision),
                             dnnl::memory::format_tag::any);
  dnnl::primitive_attr attributes;
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (use == PackedProduct::Use::Backward) {
    dnnl::post_ops accumulate;
    accumulate.append_sum(1.0f);
    attributes.set_post_ops(accumulate);
  }
  return dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(rowMajor(rows, in, inStride, typeOf(precision)),
                         weights, rowMajor(rows, out, outStride)),
      attributes, cpuEngine());
}

std::unique_ptr<PackedProduct>
PackedProduct::pack(const float *weight, int64_t n, int64_t k,
                    std::string &error, Precision precision, Use use) {
  try {
    // The layout oneDNN prefers for dense rows was the same for every row
    // count tried (1-256); 16 stands for them, and a shape that wants
    // another one (rows wider than the operands, here) is refused
    // (accepts()).
    dnnl::matmul::primitive_desc desc =
        matmulFor(16, n, k, inputWidth(use, n, k), outputWidth(use, n, k),
                  precision, use);
    auto impl = std::make_unique<Impl>();
    impl->precision = precision;
    impl->use = use;
    impl->packed = dnnl::memory(desc.weights_desc(), cpuEngine());
    // weight [n, k] row-major is forward's [k, n] matrix in layout ba and
    // backward's [n, k] in ab; the reorder rounds it to bf16 where the
    // packed layout is bf16.
    dnnl::memory plain({{inputWidth(use, n, k), outputWidth(use, n, k)},
                        dnnl::memory::data_type::f32,
                        use == Use::Forward ? dnnl::memory::format_tag::ba
                                            : dnnl::memory::format_tag::ab},
                       cpuEngine(), const_cast<float *>(weight));
    dnnl::stream stream(cpuEngine());
    dnnl::reorder(plain, impl->packed).execute(stream, plain, impl->packed);
    stream.wait();
    packedWeights.fetch_add(1);
    return std::unique_ptr<PackedProduct>(
        new PackedProduct(std::move(impl), n, k));
  } catch (const dnnl::error &failure) {
    error = "packing a [" + std::to_string(n) + ", " + std::to_string(k) +
            "] " + precisionName(precision) +
            " weight for oneDNN's matmul failed: " + describe(failure);
    return nullptr;
  }
}

/// The cached matmul for the shape and the current team, made on first use
/// (under the lock).
const PackedMatmul &PackedProduct::Impl::matmulOf(int64_t rows, int64_t n,
                                                  int64_t k, int64_t inStride,
                                                  int64_t outStride) const {
  // bf16 rows are multiplied from their dense rounded copy.
  if (precision == Precision::BF16)
    inStride = inputWidth(use, n, k);
  auto key = std::make_tuple(rows, inStride, outStride, currentThreads());
  auto found = matmuls.find(key);
  if (found != matmuls.end())
    return found->second;
  PackedMatmul made;
  dnnl::matmul::primitive_desc desc =
      matmulFor(rows, n, k, inStride, outStride, precision, use);
  if (desc.weights_desc() == packed.get_desc()) {
    made.primitive.emplace(desc);
    made.scratchpad = desc.scratchpad_desc();
  }
  return matmuls.emplace(key, std::move(made)).first->second;
}

/// Whether a backward product adds into a dense copy of its output rows:
/// oneDNN wants another weight layout for output rows at a wider stride (a
/// column range of a stacked gradient buffer), and one pass over the rows
/// each way costs 1/n of the product.
static bool stagesOutput(PackedProduct::Use use, int64_t width,
                         int64_t outStride) {
  return use == PackedProduct::Use::Backward && outStride != width;
}

PackedMatmul PackedProduct::Impl::lookup(int64_t rows, int64_t n, int64_t k,
                                         int64_t inStride,
                                         int64_t outStride) const {
  int64_t width = outputWidth(use, n, k);
  if (stagesOutput(use, width, outStride))
    outStride = width;
  std::lock_guard<std::mutex> lock(mutex);
  return matmulOf(rows, n, k, inStride, outStride);
}

bool PackedProduct::accepts(int64_t rows, int64_t inStride,
                            int64_t outStride) const {
  try {
    OpenMPThreads threads(flopsOf(rows, columns, depth), kMinSharedPackedFlops);
    return impl->lookup(rows, columns, depth, inStride, outStride)
        .primitive.has_value();
  } catch (const dnnl::error &) {
    return false;
  }
}

/// The rows a matmul reads: `in` itself, or in bf16 its rounded copy in a
/// buffer of this thread's.
static dnnl::memory sourceRows(Precision precision, int64_t rows, int64_t width,
                               const float *in, int64_t inStride) {
  if (precision == Precision::F32)
    return dnnl::memory(rowMajor(rows, width, inStride), cpuEngine(),
                        const_cast<float *>(in));
  thread_local std::vector<uint16_t> rounded;
  rounded.resize(std::max<size_t>(rounded.size(), rows * width));
  roundToBf16(in, rows, width, inStride, rounded.data());
  return dnnl::memory(
      rowMajor(rows, width, width, dnnl::memory::data_type::bf16), cpuEngine(),
      rounded.data());
}

Status PackedProduct::multiply(int64_t rows, const float *in, int64_t inStride,
                               float *out, int64_t outStride) const {
  if (std::optional<Status> done =
          tryMultiply(rows, in, inStride, out, outStride))
    return *done;
  return Status::error("oneDNN's matmul of " + std::to_string(rows) +
                       " rows wants the weight in another layout");
}

std::optional<Status> PackedProduct::tryMultiply(int64_t rows, const float *in,
                                                 int64_t inStride, float *out,
                                                 int64_t outStride) const {
  if (rows == 0)
    return Status::success();
  try {
    // The primitive is made for, and runs on, the product's team.
    OpenMPThreads threads(flopsOf(rows, columns, depth), kMinSharedPackedFlops);
    int64_t width = outputWidth(impl->use, columns, depth);
    bool staged = stagesOutput(impl->use, width, outStride);
    PackedMatmul matmul =
        impl->lookup(rows, columns, depth, inStride, outStride);
    if (!matmul.primitive)
      return std::nullopt;
    // Each thread's executions take turns with its own scratchpad.
    thread_local std::vector<char> scratch;
    scratch.resize(
        std::max<size_t>(scratch.size(), matmul.scratchpad.get_size()));
    dnnl::memory source =
        sourceRows(impl->precision, rows, inputWidth(impl->use, columns, depth),
                   in, inStride);
    thread_local std::vector<float> stagedRows;
    float *rowsOut = out;
    if (staged) {
      stagedRows.resize(std::max<size_t>(stagedRows.size(), rows * width));
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(out + r * outStride, width, stagedRows.data() + r * width);
      rowsOut = stagedRows.data();
    }
    dnnl::memory target(rowMajor(rows, width, staged ? width : outStride),
                        cpuEngine(), rowsOut);
    dnnl::memory scratchpad(matmul.scratchpad, cpuEngine(), scratch.data());
    dnnl::stream stream(cpuEngine());
    matmul.primitive->execute(stream, {{DNNL_ARG_SRC, source},
                                       {DNNL_ARG_WEIGHTS, impl->packed},
                                       {DNNL_ARG_DST, target},
                                       {DNNL_ARG_SCRATCHPAD, scratchpad}});
    stream.wait();
    if (staged)
      for (int64_t r = 0; r < rows; ++r)
        std::copy_n(stagedRows.data() + r * width, width, out + r * outStride);
    packedMultiplies.fetch_add(1);
    if (impl->precision == Precision::BF16)
      countBf16Product();
    // Inside a KeepRoundedOperands (a bf16 backward's products after the
    // steps), copies of what this wrote are stale.
    forgetRoundedCopiesOf(out, rows, outStride);
    return Status::success();
  } catch (const dnnl::error &failure) {
    return Status::error("oneDNN's matmul of " + std::to_string(rows) +
                         " rows by a packed [" + std::to_string(columns) +
                         ", " + std::to_string(depth) +
                         "] weight failed: " + describe(failure));
  }
}
