//===- PeakBench.cpp - The machine's GEMM and copy peaks ------------------===//
//
// The denominators of the machine's floors (bench/report.py): a workload's
// GEMM flops over the best GEMM rate this machine reaches is the time no
// implementation of it can beat, and the bytes an element-wise scan must
// move over the copy bandwidth likewise. Each kind runs in its own forked
// child at each thread count, as the workloads do:
//
//   sgemm        dnnl_sgemm('N', 'T'), n = 2048 (what cellrt calls)
//   matmul-f32   oneDNN's matmul primitive, n = 2048, the weights reordered
//                once into its preferred (packed) layout: oneDNN's best f32
//   matmul-bf16  the same with bf16 source and weights, f32 accumulation and
//                output (AVX512_BF16 where the CPU has it)
//   copy         memcpy of 256 MiB, split over the threads; the rate counts
//                the bytes read and written
//   fma-f32      the instruction ceilings under the GEMMs: per thread, 24
//   dot-bf16     independent chains of vfmadd231ps zmm (32 flops each) or
//                vdpbf16ps zmm (AVX512_BF16's dot product, 64 flops): a bf16
//                GEMM can beat an f32 one only where the second is faster
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <cstring>
#include <thread>
#include <unistd.h>

using namespace cellc_bench;

namespace {

constexpr int64_t kGemmSize = 2048;
constexpr int64_t kCopyBytes = int64_t(256) << 20;

class SgemmPeak : public Runner {
public:
  SgemmPeak()
      : a(randomVector(kGemmSize * kGemmSize, 1.0f, 1)),
        b(randomVector(kGemmSize * kGemmSize, 1.0f, 2)),
        c(kGemmSize * kGemmSize) {}
  void run() override {
    const int64_t n = kGemmSize;
    if (dnnl_sgemm('N', 'T', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                   c.data(), n) != dnnl_success)
      fail("dnnl_sgemm failed");
  }

private:
  std::vector<float> a, b, c;
};

class MatmulPeak : public Runner {
public:
  explicit MatmulPeak(dnnl::memory::data_type type)
      : eng(dnnl::engine::kind::cpu, 0), strm(eng) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::dims square = {kGemmSize, kGemmSize};
    dnnl::memory::desc srcMd(square, type, tag::ab);
    dnnl::memory::desc weightsMd(square, type, tag::any);
    dnnl::memory::desc dstMd(square, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(srcMd, weightsMd, dstMd), eng);
    primitive = dnnl::matmul(pd);
    // Operands are made in f32 and converted once, outside the timing.
    src = converted(square, pd.src_desc(), 1);
    weights = converted(square, pd.weights_desc(), 2);
    dst = dnnl::memory(pd.dst_desc(), eng);
  }
  void run() override {
    primitive.execute(strm, {{DNNL_ARG_SRC, src},
                             {DNNL_ARG_WEIGHTS, weights},
                             {DNNL_ARG_DST, dst}});
    strm.wait();
  }

private:
  dnnl::memory converted(const dnnl::memory::dims &dims,
                         const dnnl::memory::desc &target, uint32_t seed) {
    dnnl::memory user({dims, dnnl::memory::data_type::f32,
                       dnnl::memory::format_tag::ab},
                      eng);
    fillRandom(static_cast<float *>(user.get_data_handle()),
               dims[0] * dims[1], 1.0f, seed);
    dnnl::memory result(target, eng);
    dnnl::reorder(user, result).execute(strm, user, result);
    strm.wait();
    return result;
  }

  dnnl::engine eng;
  dnnl::stream strm;
  dnnl::matmul primitive;
  dnnl::memory src, weights, dst;
};

class CopyPeak : public Runner {
public:
  explicit CopyPeak(int threads)
      : threads(threads), from(kCopyBytes, 1), to(kCopyBytes, 0) {}
  void run() override {
    std::vector<std::thread> team;
    int64_t share = kCopyBytes / threads;
    for (int t = 0; t < threads; ++t) {
      int64_t begin = t * share;
      int64_t size = t + 1 == threads ? kCopyBytes - begin : share;
      team.emplace_back([this, begin, size] {
        std::memcpy(to.data() + begin, from.data() + begin, size);
      });
    }
    for (std::thread &thread : team)
      thread.join();
  }

private:
  int threads;
  std::vector<char> from, to;
};

#define CELLC_CHAIN(op, r) op " %%zmm0, %%zmm1, %%zmm" #r "\n\t"
#define CELLC_CHAINS(op)                                                        \
  CELLC_CHAIN(op, 8) CELLC_CHAIN(op, 9) CELLC_CHAIN(op, 10)                     \
  CELLC_CHAIN(op, 11) CELLC_CHAIN(op, 12) CELLC_CHAIN(op, 13)                   \
  CELLC_CHAIN(op, 14) CELLC_CHAIN(op, 15) CELLC_CHAIN(op, 16)                   \
  CELLC_CHAIN(op, 17) CELLC_CHAIN(op, 18) CELLC_CHAIN(op, 19)                   \
  CELLC_CHAIN(op, 20) CELLC_CHAIN(op, 21) CELLC_CHAIN(op, 22)                   \
  CELLC_CHAIN(op, 23) CELLC_CHAIN(op, 24) CELLC_CHAIN(op, 25)                   \
  CELLC_CHAIN(op, 26) CELLC_CHAIN(op, 27) CELLC_CHAIN(op, 28)                   \
  CELLC_CHAIN(op, 29) CELLC_CHAIN(op, 30) CELLC_CHAIN(op, 31)
#define CELLC_CHAIN_CLOBBERS                                                    \
  "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",        \
      "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",  \
      "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31"
constexpr int kChains = 24;
constexpr int64_t kChainRounds = 4000000;

/// Zeroes the operands, so that no denormal slows a chain down.
void zeroChains() {
  asm volatile("vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
               "vpxord %%zmm1, %%zmm1, %%zmm1\n\t" CELLC_CHAINS("vpxord")
               ::: "xmm0", "xmm1", CELLC_CHAIN_CLOBBERS);
}
void fmaChains() {
  zeroChains();
  for (int64_t i = 0; i < kChainRounds; ++i)
    asm volatile(CELLC_CHAINS("vfmadd231ps") ::: CELLC_CHAIN_CLOBBERS);
}
void dotBf16Chains() {
  zeroChains();
  for (int64_t i = 0; i < kChainRounds; ++i)
    asm volatile(CELLC_CHAINS("vdpbf16ps") ::: CELLC_CHAIN_CLOBBERS);
}

/// One chain loop per thread of a team.
class InstructionPeak : public Runner {
public:
  InstructionPeak(int threads, void (*chains)())
      : threads(threads), chains(chains) {}
  void run() override {
    std::vector<std::thread> team;
    for (int t = 0; t < threads; ++t)
      team.emplace_back(chains);
    for (std::thread &thread : team)
      thread.join();
  }

private:
  int threads;
  void (*chains)();
};

/// The runner of `kind` and the work of one run (flops, or bytes for copy);
/// null where this CPU lacks the instructions.
std::unique_ptr<Runner> makePeak(const std::string &kind, int threads,
                                 double &work) {
  const double n = kGemmSize;
  work = 2 * n * n * n;
  if (kind == "sgemm")
    return std::make_unique<SgemmPeak>();
  if (kind == "matmul-f32")
    return std::make_unique<MatmulPeak>(dnnl::memory::data_type::f32);
  if (kind == "matmul-bf16")
    return std::make_unique<MatmulPeak>(dnnl::memory::data_type::bf16);
  if (kind == "fma-f32" || kind == "dot-bf16") {
    bool bf16 = kind == "dot-bf16";
    work = double(threads) * kChainRounds * kChains * (bf16 ? 64 : 32);
    if (!__builtin_cpu_supports("avx512f") ||
        (bf16 && !__builtin_cpu_supports("avx512bf16")))
      return nullptr;
    return std::make_unique<InstructionPeak>(threads,
                                             bf16 ? dotBf16Chains : fmaChains);
  }
  work = 2.0 * double(kCopyBytes);
  return std::make_unique<CopyPeak>(threads);
}

[[noreturn]] void runPeakChild(const std::string &kind, int threads,
                               int reps) {
  setOmpThreads(threads);
  double work = 0;
  std::unique_ptr<Runner> runner;
  try {
    runner = makePeak(kind, threads, work);
  } catch (const dnnl::error &error) {
    // bf16 on a CPU without it: oneDNN has no implementation to offer.
    std::printf("SKIP peak=%s threads=%d reason=no-implementation (%s)\n",
                kind.c_str(), threads, error.what());
    std::fflush(stdout);
    _exit(0);
  }
  if (!runner) {
    std::printf("SKIP peak=%s threads=%d reason=no-instructions\n",
                kind.c_str(), threads);
    std::fflush(stdout);
    _exit(0);
  }
  std::vector<double> times = timeRuns(*runner, 1, reps, 0.5);
  double ms = percentile(times, 0.5);
  bool bytes = kind == "copy";
  std::printf("PEAK kind=%s threads=%d median_ms=%.4f rate=%.1f unit=%s\n",
              kind.c_str(), threads, ms, work / (ms * 1e-3) * 1e-9,
              bytes ? "GB/s" : "GFLOP/s");
  std::fflush(stdout);
  _exit(0);
}

} // namespace

int cellc_bench::runPeaks(const std::vector<int> &threads, int reps) {
  int failures = 0;
  for (int count : threads)
    for (const char *kind : {"sgemm", "matmul-f32", "matmul-bf16", "copy",
                             "fma-f32", "dot-bf16"})
      if (!runInChild([&] { runPeakChild(kind, count, reps); },
                      "peak=" + std::string(kind) +
                          " threads=" + std::to_string(count)))
        ++failures;
  return failures;
}
