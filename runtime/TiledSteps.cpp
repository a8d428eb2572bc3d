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
/// Q[batch, gates*block] = in · (block j's rows of every gate)ᵀ, on
/// libxsmm's column-major kernel: A is the packed block [hidden][gates*block].
using TileGemm = libxsmm_smmfunction;

TileGemm dispatchTileGemm(const TiledForward &f, const TiledStage &stage) {
  static std::once_flag initialized;
  std::call_once(initialized, [] { libxsmm_init(); });
  const libxsmm_blasint m = stage.gates * f.block, n = f.batch, k = f.hidden,
                        lda = m,
                        ldb = stage.inputState >= 0 ? f.hidden
                                                    : stage.inputStride,
                        ldc = m;
  const float alpha = 1, beta = 0;
  // No prefetch: a prefetching kernel takes more than (a, b, c).
  const int flags = LIBXSMM_GEMM_FLAG_NONE, prefetch = LIBXSMM_PREFETCH_NONE;
  return libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags,
                             &prefetch);
}

/// packed[j][k * gates*block + g*block + n] = W[g*hidden + j*block + n][k].
void packBlock(const TiledForward &f, const TiledStage &stage, int64_t j,
               float *packed) {
  int64_t m = stage.gates * f.block;
  float *target = packed + j * f.hidden * m;
  for (int64_t g = 0; g < stage.gates; ++g)
    for (int64_t n = 0; n < f.block; ++n) {
      const float *row =
          stage.weight + (g * f.hidden + j * f.block + n) * f.hidden;
      for (int64_t k = 0; k < f.hidden; ++k)
        target[k * m + g * f.block + n] = row[k];
    }
}

/// A stage's libxsmm kernel and its weight packed per block.
struct StageGemm {
  TileGemm gemm = nullptr;
  std::vector<float> packed;
};

/// One member's share: blocks [first, last) of every stage of every step.
class Member {
public:
  Member(const TiledForward &f, std::vector<StageGemm> &gemms, int64_t first,
         int64_t last)
      : f(f), gemms(gemms), first(first), last(last), current(f.current),
        next(f.next) {
    for (const TiledStage &stage : f.stages) {
      // The block's products of every stage live until the step ends: a
      // later kernel may read an earlier stage's gates (GRU's z).
      products.emplace_back((last - first) * f.batch * stage.gates * f.block);
      std::vector<int64_t> stageStrides;
      for (const TiledArg &arg : stage.args)
        stageStrides.push_back(arg.kind == TiledArg::Kind::Product
                                   ? f.stages[arg.stage].gates * f.block
                                   : arg.stride);
      strides.push_back(std::move(stageStrides));
    }
  }

  void run(SpinBarrier &barrier) {
    for (size_t s = 0; s < f.stages.size(); ++s)
      for (int64_t j = first; j < last; ++j)
        packBlock(f, f.stages[s], j, gemms[s].packed.data());
    for (int64_t step = 0; step < f.steps; ++step) {
      for (size_t s = 0; s < f.stages.size(); ++s) {
        runStage(s, step);
        barrier.wait();
      }
      std::swap(current, next);
    }
  }

private:
  void runStage(size_t s, int64_t step) {
    const TiledStage &stage = f.stages[s];
    const float *in = stage.inputState >= 0
                          ? current[stage.inputState]
                          : stage.input + step * stage.inputAdvance;
    int64_t m = stage.gates * f.block;
    std::vector<float *> pointers(stage.args.size());
    for (int64_t j = first; j < last; ++j) {
      gemms[s].gemm(gemms[s].packed.data() + j * f.hidden * m, in,
                    product(s, j));
      for (size_t a = 0; a < stage.args.size(); ++a)
        pointers[a] = bind(stage.args[a], step, j);
      stage.kernel(0, f.batch, step, f.lengths, f.dims.data(),
                   pointers.data(), strides[s].data());
    }
  }

  float *product(size_t stage, int64_t block) {
    return products[stage].data() +
           (block - first) * f.batch * f.stages[stage].gates * f.block;
  }

  float *bind(const TiledArg &arg, int64_t step, int64_t block) {
    int64_t column = block * f.block;
    switch (arg.kind) {
    case TiledArg::Kind::Array:
      return arg.base + step * arg.stepAdvance + column;
    case TiledArg::Kind::State:
      return current[arg.index] + column;
    case TiledArg::Kind::NextState:
      return next[arg.index] + column;
    case TiledArg::Kind::Product:
      return product(arg.stage, block) + arg.index * f.block;
    }
    return nullptr;
  }

  const TiledForward &f;
  std::vector<StageGemm> &gemms;
  int64_t first, last;
  std::vector<std::vector<float>> products;
  std::vector<std::vector<int64_t>> strides;
  std::vector<float *> current, next;
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
  std::vector<StageGemm> gemms(f.stages.size());
  for (size_t s = 0; s < f.stages.size(); ++s) {
    const TiledStage &stage = f.stages[s];
    gemms[s].gemm = dispatchTileGemm(f, stage);
    if (!gemms[s].gemm)
      return Status::error("libxsmm has no kernel for a " +
                           std::to_string(stage.gates * f.block) + " x " +
                           std::to_string(f.batch) + " x " +
                           std::to_string(f.hidden) + " tile product");
    gemms[s].packed.resize(stage.gates * f.hidden * f.hidden);
  }
  tiledCalls.fetch_add(1);
  int64_t blocks = f.hidden / f.block;
  int64_t team = std::min<int64_t>(threads(), blocks);
  SpinBarrier barrier(team);
  // One chunk per member, each on its own pool thread, all at once.
  parallelRows(team, std::numeric_limits<int64_t>::max(),
               [&](int64_t begin, int64_t end) {
                 for (int64_t member = begin; member < end; ++member) {
                   Member share(f, gemms, blocks * member / team,
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
