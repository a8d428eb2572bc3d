//===- TiledSteps.cpp - Gate math on the recurrent product's tiles --------===//

#include "TiledSteps.h"

#include "Parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#ifdef CELLRT_HAVE_LIBXSMM
#include <libxsmm.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace cellrt;
using namespace cellrt::detail;

namespace {

/// One meeting per step: a generation-count barrier that spins (a step
/// takes tens of microseconds) and yields once a member is late, so that a
/// descheduled member on a loaded machine does not stall the others for
/// its whole time slice.
class SpinBarrier {
public:
  explicit SpinBarrier(int64_t size) : size(size) {}
  void wait() {
    int64_t generation = phase.load(std::memory_order_acquire);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) == size - 1) {
      arrived.store(0, std::memory_order_relaxed);
      phase.fetch_add(1, std::memory_order_release);
      return;
    }
    for (int spins = 0; phase.load(std::memory_order_acquire) == generation;
         ++spins) {
      if (spins < kSpins)
        pause();
      else
        std::this_thread::yield();
    }
  }

private:
  static constexpr int kSpins = 2000;
  static void pause() {
#if defined(__x86_64__)
    _mm_pause();
#endif
  }
  const int64_t size;
  std::atomic<int64_t> arrived{0}, phase{0};
};

#ifdef CELLRT_HAVE_LIBXSMM
/// Q[batch, gates*block] = h · (block j's rows of every gate)ᵀ, on libxsmm's
/// column-major kernel: A is the packed block [hidden][gates*block].
using TileGemm = libxsmm_smmfunction;

TileGemm dispatchTileGemm(const TiledForward &f) {
  static std::once_flag initialized;
  std::call_once(initialized, [] { libxsmm_init(); });
  const libxsmm_blasint m = f.gates * f.block, n = f.batch, k = f.hidden,
                        lda = m, ldb = f.hidden, ldc = m;
  const float alpha = 1, beta = 0;
  // No prefetch: a prefetching kernel takes more than (a, b, c).
  const int flags = LIBXSMM_GEMM_FLAG_NONE, prefetch = LIBXSMM_PREFETCH_NONE;
  return libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags,
                             &prefetch);
}

/// packed[j][k * gates*block + g*block + n] = W[g*hidden + j*block + n][k].
void packBlock(const TiledForward &f, int64_t j, float *packed) {
  int64_t m = f.gates * f.block;
  float *target = packed + j * f.hidden * m;
  for (int64_t g = 0; g < f.gates; ++g)
    for (int64_t n = 0; n < f.block; ++n) {
      const float *row = f.weight + (g * f.hidden + j * f.block + n) * f.hidden;
      for (int64_t k = 0; k < f.hidden; ++k)
        target[k * m + g * f.block + n] = row[k];
    }
}

/// One member's share: blocks [first, last) of every step.
class Member {
public:
  Member(const TiledForward &f, TileGemm gemm, float *packed, int64_t first,
         int64_t last)
      : f(f), gemm(gemm), packed(packed), first(first), last(last),
        product(f.batch * f.gates * f.block), current(f.current),
        next(f.next), pointers(f.args.size()) {
    for (const TiledArg &arg : f.args)
      strides.push_back(arg.kind == TiledArg::Kind::Product
                            ? f.gates * f.block
                            : arg.stride);
  }

  void run(SpinBarrier &barrier) {
    for (int64_t j = first; j < last; ++j)
      packBlock(f, j, packed);
    int64_t m = f.gates * f.block;
    for (int64_t step = 0; step < f.steps; ++step) {
      const float *h = current[f.productState];
      for (int64_t j = first; j < last; ++j) {
        gemm(packed + j * f.hidden * m, h, product.data());
        bind(step, j * f.block);
        f.kernel(0, f.batch, step, f.lengths, f.dims.data(), pointers.data(),
                 strides.data());
      }
      barrier.wait();
      std::swap(current, next);
    }
  }

private:
  void bind(int64_t step, int64_t column) {
    for (size_t a = 0; a < f.args.size(); ++a) {
      const TiledArg &arg = f.args[a];
      switch (arg.kind) {
      case TiledArg::Kind::Array:
        pointers[a] = arg.base + step * arg.stepAdvance + column;
        break;
      case TiledArg::Kind::State:
        pointers[a] = current[arg.index] + column;
        break;
      case TiledArg::Kind::NextState:
        pointers[a] = next[arg.index] + column;
        break;
      case TiledArg::Kind::Product:
        pointers[a] = product.data() + arg.index * f.block;
        break;
      }
    }
  }

  const TiledForward &f;
  TileGemm gemm;
  float *packed;
  int64_t first, last;
  std::vector<float> product;
  std::vector<float *> current, next, pointers;
  std::vector<int64_t> strides;
};
#endif

std::atomic<int64_t> tiledCalls{0};

} // namespace

int64_t cellrt::detail::tiledForwardCalls() { return tiledCalls.load(); }

bool cellrt::detail::tiledStepsEnabled() {
#ifdef CELLRT_HAVE_LIBXSMM
  static const bool enabled = [] {
    const char *value = std::getenv("CELLRT_TILED_STEPS");
    return value && std::strcmp(value, "1") == 0;
  }();
  return enabled;
#else
  return false;
#endif
}

int64_t cellrt::detail::tiledBlock(int64_t hidden) {
  for (int64_t block : {64, 32, 16, 8})
    if (hidden % block == 0 && hidden / block >= 2)
      return block;
  return 0;
}

Status cellrt::detail::runTiledForward(const TiledForward &f) {
#ifdef CELLRT_HAVE_LIBXSMM
  TileGemm gemm = dispatchTileGemm(f);
  if (!gemm)
    return Status::error("libxsmm has no kernel for a " +
                         std::to_string(f.gates * f.block) + " x " +
                         std::to_string(f.batch) + " x " +
                         std::to_string(f.hidden) + " tile product");
  tiledCalls.fetch_add(1);
  std::vector<float> packed(f.gates * f.hidden * f.hidden);
  int64_t blocks = f.hidden / f.block;
  int64_t team = std::min<int64_t>(threads(), blocks);
  SpinBarrier barrier(team);
  // One chunk per member, each on its own pool thread, all at once.
  parallelRows(team, std::numeric_limits<int64_t>::max(),
               [&](int64_t begin, int64_t end) {
                 for (int64_t member = begin; member < end; ++member) {
                   Member share(f, gemm, packed.data(),
                                blocks * member / team,
                                blocks * (member + 1) / team);
                   share.run(barrier);
                 }
               });
  return Status::success();
#else
  (void)f;
  return Status::error("cellrt was built without libxsmm: no tiled steps");
#endif
}
