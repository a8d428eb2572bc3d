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

/// The runner of `kind` and the work of one run (flops, or bytes for copy).
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
    for (const char *kind : {"sgemm", "matmul-f32", "matmul-bf16", "copy"})
      if (!runInChild([&] { runPeakChild(kind, count, reps); },
                      "peak=" + std::string(kind) +
                          " threads=" + std::to_string(count)))
        ++failures;
  return failures;
}
