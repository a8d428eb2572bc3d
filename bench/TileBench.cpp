//===- TileBench.cpp - Gate math on GEMM tiles: the #16 experiment -------===//
//
// Issue #16, item 2, tried before the runtime is rebuilt around it: does
// applying the generated kernel to each GEMM output tile while it is in
// cache, with one team that lives for the whole sequence and meets once per
// step (started per run: ~0.1 ms of a run of tens of ms), beat cellrt's
// schedule (one GEMM call per product per step, then a kernel over the
// whole output)? Implementation `tiles`, ATR forward only:
//
//   XP[T*B, H] = X · Wxᵀ                     once, dnnl_sgemm (hoisted)
//   per step t, per block j of kBlock hidden units (a thread owns its
//   blocks for the whole sequence):
//     Q[B, kBlock] = h_t · Wh[j]ᵀ            libxsmm, Wh packed once per
//                                            block into [H][kBlock]
//     kernel 0 of cells/atr.cell on rows 0..B, with dims H := kBlock and
//     every pointer moved to column j: the compiled kernel computes
//     exactly that tile of h_{t+1} and of the output
//   barrier
//
// `tiles-sgemm` is the same schedule with each tile's product on
// dnnl_sgemm (one OpenMP thread per member) instead of libxsmm: the control
// that separates the micro-kernel's speed from the schedule's.
//
// The constructor checks the first steps against a scalar evaluation of
// the ATR equations, so a fast wrong answer fails the workload.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include "atr.h"

#include <libxsmm.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <atomic>
#include <immintrin.h>
#include <thread>

using namespace cellc_bench;

namespace {

constexpr int64_t kBlock = 64;
constexpr int64_t kCheckedSteps = 3;

/// One wait per step: a generation-count spin barrier. Spinning suits a
/// team of one thread per core on an otherwise idle machine; on a loaded
/// one a descheduled member stalls the rest (measure idle).
class SpinBarrier {
public:
  explicit SpinBarrier(int size) : size(size) {}
  void wait() {
    int generation = phase.load(std::memory_order_acquire);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) == size - 1) {
      arrived.store(0, std::memory_order_relaxed);
      phase.fetch_add(1, std::memory_order_release);
      return;
    }
    while (phase.load(std::memory_order_acquire) == generation)
      _mm_pause();
  }

private:
  int size;
  std::atomic<int> arrived{0}, phase{0};
};

float sigmoid(double x) { return float(1 / (1 + std::exp(-x))); }

class TileRunner : public Runner {
public:
  TileRunner(const Workload &w, bool onLibxsmm)
      : w(w), onLibxsmm(onLibxsmm), blocks(w.H / kBlock),
        lengths(w.B, int32_t(w.T)) {
    float scale = 1.0f / std::sqrt(static_cast<float>(w.H));
    wx = randomVector(w.H * w.I, scale, 1);
    wh = randomVector(w.H * w.H, scale, 2);
    x = randomVector(w.T * w.B * w.I, 1.0f, 3);
    xp.assign(w.T * w.B * w.H, 0.0f);
    out.assign(w.T * w.B * w.H, 0.0f);
    for (std::vector<float> &h : state)
      h.assign(w.B * w.H, 0.0f);
    packRecurrentWeights();
    cellrt_image image = cellc_atr_image();
    kernel = image.kernels[0];
    libxsmm_init();
    const libxsmm_blasint m = kBlock, n = w.B, k = w.H, lda = kBlock,
                          ldb = w.H, ldc = kBlock;
    const float alpha = 1, beta = 0;
    // No prefetch: a prefetching kernel would expect more than (a, b, c).
    const int flags = LIBXSMM_GEMM_FLAG_NONE, prefetch = LIBXSMM_PREFETCH_NONE;
    gemm = libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta,
                               &flags, &prefetch);
    if (!gemm)
      fail("libxsmm has no kernel for the tile GEMM");
    run();
    checkFirstSteps();
  }

  void run() override {
    if (dnnl_sgemm('N', 'T', w.T * w.B, w.H, w.I, 1.0f, x.data(), w.I,
                   wx.data(), w.I, 0.0f, xp.data(), w.H) != dnnl_success)
      fail("dnnl_sgemm failed");
    std::fill(state[0].begin(), state[0].end(), 0.0f);
    int team = w.threads;
    SpinBarrier barrier(team);
    std::vector<std::thread> others;
    for (int member = 1; member < team; ++member)
      others.emplace_back([&, member] { scan(member, team, barrier); });
    scan(0, team, barrier);
    for (std::thread &other : others)
      other.join();
  }

private:
  /// Block j of Wh (rows j*kBlock..) as libxsmm's column-major A operand:
  /// packed[j][k * kBlock + n] = Wh[j * kBlock + n][k].
  void packRecurrentWeights() {
    if (w.H % kBlock)
      fail("H must be a multiple of the tile width");
    packed.assign(w.H * w.H, 0.0f);
    for (int64_t j = 0; j < blocks; ++j)
      for (int64_t k = 0; k < w.H; ++k)
        for (int64_t n = 0; n < kBlock; ++n)
          packed[(j * w.H + k) * kBlock + n] = wh[(j * kBlock + n) * w.H + k];
  }

  /// Q[B, kBlock] = h · (rows j*kBlock.. of Wh)ᵀ.
  void tileProduct(int64_t j, const float *h, float *q) const {
    if (onLibxsmm) {
      gemm(packed.data() + j * w.H * kBlock, h, q);
      return;
    }
    if (dnnl_sgemm('N', 'T', w.B, kBlock, w.H, 1.0f, h, w.H,
                   wh.data() + j * kBlock * w.H, w.H, 0.0f, q,
                   kBlock) != dnnl_success)
      fail("dnnl_sgemm failed");
  }

  void scan(int member, int team, SpinBarrier &barrier) {
    // One OpenMP thread per member's GEMMs: two members must not each start
    // a team of two.
    if (!onLibxsmm && team > 1)
      setOmpTeamSize(1);
    std::vector<float> q(w.B * kBlock);
    int64_t first = blocks * member / team, last = blocks * (member + 1) / team;
    const int64_t dims[2] = {kBlock, w.I};
    const int64_t strides[5] = {w.H, w.H, kBlock, w.H, w.H};
    for (int64_t t = 0; t < w.T; ++t) {
      float *h = state[t % 2].data(), *next = state[(t + 1) % 2].data();
      for (int64_t j = first; j < last; ++j) {
        int64_t column = j * kBlock;
        tileProduct(j, h, q.data());
        float *ptrs[5] = {h + column, xp.data() + t * w.B * w.H + column,
                          q.data(), next + column,
                          out.data() + t * w.B * w.H + column};
        kernel(0, w.B, t, lengths.data(), dims, ptrs, strides);
      }
      barrier.wait();
    }
  }

  /// The ATR equations in double for the first steps, against `out`.
  void checkFirstSteps() const {
    std::vector<double> h(w.B * w.H, 0.0), next(w.B * w.H);
    double worst = 0;
    for (int64_t t = 0; t < std::min(kCheckedSteps, w.T); ++t) {
      for (int64_t b = 0; b < w.B; ++b)
        for (int64_t j = 0; j < w.H; ++j) {
          double p = 0, q = 0;
          for (int64_t k = 0; k < w.I; ++k)
            p += double(wx[j * w.I + k]) * x[(t * w.B + b) * w.I + k];
          for (int64_t k = 0; k < w.H; ++k)
            q += double(wh[j * w.H + k]) * h[b * w.H + k];
          double value = sigmoid(p + q) * p + sigmoid(p - q) * h[b * w.H + j];
          next[b * w.H + j] = value;
          double got = out[(t * w.B + b) * w.H + j];
          worst = std::max(worst, std::fabs(got - value) /
                                      std::max(1.0, std::fabs(value)));
        }
      h.swap(next);
    }
    if (!(worst < 1e-4))
      fail("tiles: output differs from the ATR equations by " +
           std::to_string(worst));
  }

  Workload w;
  bool onLibxsmm;
  int64_t blocks;
  std::vector<int32_t> lengths;
  std::vector<float> wx, wh, packed, x, xp, out, state[2];
  cellrt_kernel_fn kernel = nullptr;
  libxsmm_smmfunction gemm = nullptr;
};

Factory tilesOn(bool onLibxsmm) {
  return [onLibxsmm](const Workload &w,
                     std::string &why) -> std::unique_ptr<Runner> {
    if (w.cell != "atr" || w.mode != Mode::Forward) {
      why = "the-tile-experiment-covers-atr-forward-only";
      return nullptr;
    }
    return std::make_unique<TileRunner>(w, onLibxsmm);
  };
}

Register libxsmmTiles({"tiles", tilesOn(true),
                       [](int threads) { setOmpThreads(threads); },
                       prewarmSgemm});
Register sgemmTiles({"tiles-sgemm", tilesOn(false),
                     [](int threads) { setOmpThreads(threads); },
                     prewarmSgemm});

} // namespace
