//===- GemmBf16.cpp - Matrix products that read bfloat16 ------------------===//
//
// A plan in bf16 precision (cellrt/Plan.h) multiplies operands rounded to
// bfloat16 and sums in f32: each operand is rounded into a dense copy (a
// large one on the kernel pool), and oneDNN's bf16 matmul (its avx512_core_bf16
// or AMX kernels) multiplies the copies into the f32 output. The matmul reads a
// transposed operand through its strides, so every product the plan needs
// is one primitive. Primitives are kept per shape, a bounded number. Under
// a KeepRoundedOperands (backward's products after the steps) the rounded
// copies are kept and an operand within one is read from it, through the
// matmul's strides, instead of being rounded again.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "OneDnn.h"
#include "Parallel.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

using namespace cellrt;
using namespace cellrt::detail;

// Compiled for AVX-512 too, chosen at load time: the baseline build rounds
// 4 values per instruction, and a bf16 plan rounds every product's
// operands (LSTM training, T=50 B=64, 2 threads: rounding took ~9% of the
// time; bench/README.md, "bf16 tiles"). Both give the same bits.
#if defined(__x86_64__) && defined(__ELF__)
__attribute__((target_clones("avx512f", "default")))
#endif
void detail::roundToBf16(const float *source, int64_t rows, int64_t columns,
                    int64_t stride, uint16_t *target) {
  for (int64_t row = 0; row < rows; ++row) {
    const float *from = source + row * stride;
    uint16_t *to = target + row * columns;
    for (int64_t column = 0; column < columns; ++column)
      to[column] = cellrt::roundToBf16(from[column]);
  }
}

namespace {

using dnnl::memory;

/// A product's shape, (transposeA, transposeB, m, n, k, out stride, beta),
/// the row lengths of its rounded operands, and the team it runs on.
using ProductKey = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t,
                              float, int64_t, int64_t, int>;

struct Bf16Matmul {
  dnnl::matmul primitive;
  memory::desc a, b, out, scratchpad;
};

/// The [rows, columns] bf16 matrix of a rounded copy of a stored operand
/// whose rows are `copyRow` apart, read transposed when the operand is
/// stored [columns, rows].
memory::desc roundedOperand(int64_t rows, int64_t columns, bool transposed,
                            int64_t copyRow) {
  return memory::desc({rows, columns}, memory::data_type::bf16,
                      transposed ? memory::dims{1, copyRow}
                                 : memory::dims{copyRow, 1});
}

memory::desc denseOperand(int64_t rows, int64_t columns, bool transposed) {
  return roundedOperand(rows, columns, transposed, transposed ? rows : columns);
}

Bf16Matmul makeMatmul(const ProductKey &key) {
  auto [transposeA, transposeB, m, n, k, outStride, beta, rowA, rowB, threads] =
      key;
  Bf16Matmul made;
  made.a = roundedOperand(m, k, transposeA, rowA);
  made.b = roundedOperand(k, n, transposeB, rowB);
  made.out = rowMajor(m, n, outStride);
  dnnl::primitive_attr attributes;
  // Executions share a primitive across threads, each with its own
  // scratchpad (a library scratchpad would tie it to one thread).
  attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (beta != 0.0f) {
    dnnl::post_ops accumulate;
    accumulate.append_sum(beta);
    attributes.set_post_ops(accumulate);
  }
  dnnl::matmul::primitive_desc desc(
      dnnl::matmul::desc(made.a, made.b, made.out), attributes, cpuEngine());
  made.primitive = dnnl::matmul(desc);
  made.scratchpad = desc.scratchpad_desc();
  return made;
}

/// Primitives by shape. Sequence lengths vary per batch, so the map is
/// emptied when it grows past what a model's shapes need.
Bf16Matmul matmulOf(const ProductKey &key) {
  constexpr size_t kMaxKept = 512;
  static std::mutex mutex;
  static std::map<ProductKey, Bf16Matmul> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = made.find(key);
  if (found != made.end())
    return found->second;
  if (made.size() >= kMaxKept)
    made.clear();
  return made.emplace(key, makeMatmul(key)).first->second;
}

/// This thread's dense copy of an operand, stored as given (rows x
/// columns, `stride` apart), rounded on the kernel pool's threads where
/// it is large (a weight gradient's [T*B, 4H] operand): on the calling
/// thread alone the rounding left the product's second thread idle.
uint16_t *roundedCopy(std::vector<uint16_t> &copy, const float *source,
                      int64_t rows, int64_t columns, int64_t stride) {
  copy.resize(std::max<size_t>(copy.size(), rows * columns));
  uint16_t *target = copy.data();
  parallelRows(rows, rows * columns, [&](int64_t begin, int64_t end) {
    roundToBf16(source + begin * stride, end - begin, columns, stride,
                target + begin * columns);
  });
  return target;
}

/// A rounded copy of `rows` x `columns` floats at `source`, `stride` apart:
/// where it is and how far apart its rows are.
struct Rounded {
  const uint16_t *data;
  int64_t row;
};

/// The copies a KeepRoundedOperands keeps on this thread. Their buffers
/// outlive it, so that the next call's copies fault no pages in (LSTM at
/// T=50 B=64 H=512: ~35 MB per thread that runs backward in bf16).
struct KeptCopy {
  const float *source = nullptr;
  int64_t rows = 0, columns = 0, stride = 0;
  std::vector<uint16_t> copy;
  /// The caller's copy instead of `copy` (KeepRoundedOperands::lend), and
  /// the depth of the scope that lent it, which drops it when it ends.
  const uint16_t *lent = nullptr;
  int lentAt = 0;
  const uint16_t *data() const { return lent ? lent : copy.data(); }
};
struct KeptCopies {
  int depth = 0;
  std::vector<KeptCopy> copies;
  size_t used = 0;
};
thread_local KeptCopies kept;
std::atomic<int64_t> reusedOperands{0};

/// `source` lies within `copy`'s operand: its rows and columns inside.
const uint16_t *within(const KeptCopy &copy, const float *source, int64_t rows,
                       int64_t columns, int64_t stride) {
  if (copy.stride != stride || stride <= 0)
    return nullptr;
  auto first = reinterpret_cast<uintptr_t>(copy.source);
  auto at = reinterpret_cast<uintptr_t>(source);
  if (at < first || (at - first) % sizeof(float))
    return nullptr;
  uintptr_t offset = (at - first) / sizeof(float);
  uintptr_t row = offset / uintptr_t(stride),
            column = offset % uintptr_t(stride);
  if (row + rows > uintptr_t(copy.rows) ||
      column + columns > uintptr_t(copy.columns))
    return nullptr;
  return copy.data() + row * copy.columns + column;
}

/// The slot the next kept copy goes into (its buffer reused).
KeptCopy &nextCopy() {
  if (kept.used == kept.copies.size())
    kept.copies.emplace_back();
  return kept.copies[kept.used];
}

/// Makes `copy`, the slot nextCopy() gave, a kept copy of the operand at
/// `source`: its own buffer, or `lent`.
void keepCopy(KeptCopy &copy, const float *source, int64_t rows,
              int64_t columns, int64_t stride, const uint16_t *lent) {
  copy.source = source;
  copy.rows = rows;
  copy.columns = columns;
  copy.stride = stride;
  copy.lent = lent;
  copy.lentAt = kept.depth;
  ++kept.used;
}

/// Keeps the kept copies for which `stays` holds, in order.
template <typename Stays> void keepOnly(Stays stays) {
  size_t live = 0;
  for (size_t i = 0; i < kept.used; ++i)
    if (stays(kept.copies[i]))
      std::swap(kept.copies[live++], kept.copies[i]);
  kept.used = live;
}

/// The operand rounded: from a kept copy that holds it, else into a new
/// kept copy (while a KeepRoundedOperands lives), else into `scratch`.
Rounded rounded(std::vector<uint16_t> &scratch, const float *source,
                int64_t rows, int64_t columns, int64_t stride) {
  if (kept.depth == 0)
    return {roundedCopy(scratch, source, rows, columns, stride), columns};
  for (size_t i = 0; i < kept.used; ++i) {
    const KeptCopy &copy = kept.copies[i];
    if (const uint16_t *data = within(copy, source, rows, columns, stride)) {
      reusedOperands.fetch_add(1);
      return {data, copy.columns};
    }
  }
  KeptCopy &copy = nextCopy();
  const uint16_t *data = roundedCopy(copy.copy, source, rows, columns, stride);
  // Kept only once complete: a failed allocation above keeps nothing.
  keepCopy(copy, source, rows, columns, stride, nullptr);
  return {data, columns};
}

/// Where [rows, stride] floats from `at` end, as an address.
uintptr_t endOf(const float *at, int64_t rows, int64_t stride) {
  return reinterpret_cast<uintptr_t>(at) +
         uintptr_t(rows) * uintptr_t(stride) * sizeof(float);
}

/// A product wrote [rows, ...] at `out`: the kept copies of what it
/// overlaps are stale (none outside a KeepRoundedOperands).
void forgetOverwritten(const float *out, int64_t rows, int64_t outStride) {
  if (kept.depth == 0)
    return;
  auto begin = reinterpret_cast<uintptr_t>(out);
  uintptr_t end = endOf(out, rows, outStride);
  keepOnly([&](const KeptCopy &copy) {
    auto first = reinterpret_cast<uintptr_t>(copy.source);
    uintptr_t last = endOf(copy.source, copy.rows, copy.stride);
    return last <= begin || end <= first;
  });
}

} // namespace

KeepRoundedOperands::KeepRoundedOperands(bool keep) : keep(keep) {
  if (keep)
    ++kept.depth;
}

void KeepRoundedOperands::lend(const float *source, int64_t rows,
                               int64_t columns, int64_t stride,
                               const uint16_t *rounded) {
  if (!keep || rows <= 0 || columns <= 0)
    return;
  keepCopy(nextCopy(), source, rows, columns, stride, rounded);
}

KeepRoundedOperands::~KeepRoundedOperands() {
  if (!keep)
    return;
  // What this scope lent may not outlive it (an outer scope keeps the
  // rest).
  keepOnly([](const KeptCopy &copy) {
    return !copy.lent || copy.lentAt != kept.depth;
  });
  if (--kept.depth == 0)
    kept.used = 0;
}

void detail::forgetRoundedCopiesOf(const float *out, int64_t rows,
                                   int64_t outStride) {
  forgetOverwritten(out, rows, outStride);
}

int64_t detail::bf16OperandsReused() { return reusedOperands.load(); }

static std::atomic<int64_t> bf16Products{0};

int64_t detail::bf16ProductsSoFar() { return bf16Products.load(); }

void detail::countBf16Product() { bf16Products.fetch_add(1); }

Status detail::bf16Available() {
  // oneDNN 2.6 multiplies bf16 on AVX-512 CPUs (avx512_core and later);
  // elsewhere it has no implementation.
  static const Status status = [] {
    try {
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(denseOperand(1, 1, false),
                                                      denseOperand(1, 1, false),
                                                      rowMajor(1, 1, 1)),
                                   cpuEngine());
      return Status::success();
    } catch (const dnnl::error &failure) {
      return Status::error("this CPU cannot multiply in bf16 (oneDNN needs "
                           "AVX-512): " +
                           describe(failure));
    }
  }();
  return status;
}

Status detail::gemmBf16(bool transposeA, bool transposeB, int64_t m, int64_t n,
                        int64_t k, const float *a, int64_t aStride,
                        const float *b, int64_t bStride, float *out,
                        int64_t outStride, float beta) {
  if (m == 0 || n == 0)
    return Status::success();
  if (k == 0) {
    if (beta == 0.0f) {
      for (int64_t row = 0; row < m; ++row)
        std::memset(out + row * outStride, 0, n * sizeof(float));
      forgetOverwritten(out, m, outStride);
    }
    return Status::success();
  }
  thread_local std::vector<uint16_t> copyA, copyB;
  thread_local std::vector<char> scratch;
  try {
    // The primitive is made for the product's team.
    OpenMPThreads threads(flopsOf(m, n, k));
    Rounded roundedA = transposeA ? rounded(copyA, a, k, m, aStride)
                                  : rounded(copyA, a, m, k, aStride);
    Rounded roundedB = transposeB ? rounded(copyB, b, n, k, bStride)
                                  : rounded(copyB, b, k, n, bStride);
    Bf16Matmul matmul =
        matmulOf({transposeA, transposeB, m, n, k, outStride, beta,
                  roundedA.row, roundedB.row, currentThreads()});
    scratch.resize(
        std::max<size_t>(scratch.size(), matmul.scratchpad.get_size()));
    dnnl::stream stream(cpuEngine());
    matmul.primitive.execute(
        stream,
        {{DNNL_ARG_SRC,
          memory(matmul.a, cpuEngine(), const_cast<uint16_t *>(roundedA.data))},
         {DNNL_ARG_WEIGHTS,
          memory(matmul.b, cpuEngine(), const_cast<uint16_t *>(roundedB.data))},
         {DNNL_ARG_DST, memory(matmul.out, cpuEngine(), out)},
         {DNNL_ARG_SCRATCHPAD,
          memory(matmul.scratchpad, cpuEngine(), scratch.data())}});
    stream.wait();
    forgetOverwritten(out, m, outStride);
    countBf16Product();
    return Status::success();
  } catch (const dnnl::error &failure) {
    return Status::error("oneDNN's bf16 matmul failed for a " +
                         std::string(transposeA ? "transposed " : "") + "[" +
                         std::to_string(m) + ", " + std::to_string(k) + "] x " +
                         (transposeB ? "transposed " : "") + "[" +
                         std::to_string(k) + ", " + std::to_string(n) +
                         "] product: " + describe(failure));
  }
}
