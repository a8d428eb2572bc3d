//===- TiledSteps.h - Gate math on the recurrent products' tiles -*- C++ -*-===//
//
// Issue #16, item 2: a recurrent cell's time loop as oneDNN's RNN primitive
// schedules it. One team of the kernel pool's threads lives for the whole
// loop; each member owns blocks of hidden units and per step runs, block
// by block, its part of every operation of the step: a product's columns
// for those units (libxsmm, the weight packed per block in panels of 32
// columns once per call, or once for all calls in PackedWeights), a kernel
// on those columns while they are in cache (dims H := the block, every
// argument moved to the block's columns). In inference the products of
// inputs, which the per-step schedule hoists out of the loop, run per step
// and block too. The team meets before a product that reads whole rows
// written in the same step (GRU's U_h (r*h), backward's dh += dS U) and at
// the end of each step. The per-step GEMM calls over all of H, the
// separate kernel passes over their outputs and the hand-off between
// oneDNN's OpenMP team and the kernel pool are gone.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_TILEDSTEPS_H
#define CELLRT_TILEDSTEPS_H

#include "cellrt/Kernel.h"
#include "cellrt/Plan.h"
#include "cellrt/Runtime.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

/// Packed recurrent weights, by (plan weight, block, panel), each every
/// block's panels as TiledSteps.cpp lays them out. Filled once per key, by
/// the first call that packs it; never changed afterwards.
struct cellrt::PackedPanels {
  std::mutex mutex;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<float>> packed;
  /// A bf16 cell's: bfloat16 in VNNI pairs (TiledSteps::bf16).
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<uint16_t>>
      packedBf16;
};

namespace cellrt::detail {

/// Where a kernel argument or product operand is, relative to a block's
/// first column.
struct TiledArg {
  enum class Kind {
    /// base + step * stepAdvance (a buffer, a state's history, the output,
    /// an input, a param).
    Array,
    /// A double-buffered array, half `index` of pair `pair` (0: the current
    /// states, 1: the next ones; 2: the incoming state gradients, 3: the
    /// outgoing ones), swapped every step.
    Slot,
    /// Gate `index` of the block's product of phase `phase` (inference
    /// products stay in the member's cache).
    Product,
  };
  Kind kind = Kind::Array;
  /// Array: `base`, or where set `*array + column` (a call's own array,
  /// read from the executor's entry for it when the steps run).
  float *base = nullptr;
  float *const *array = nullptr;
  int64_t column = 0;
  int64_t stepAdvance = 0;
  int64_t index = 0, pair = 0, phase = 0;
  /// The row stride (0: a param broadcast to every row).
  int64_t stride = 0;
};

/// One operation of the step, run per block.
struct TiledPhase {
  enum class Kind {
    /// A kernel on the block's columns of its arguments.
    Kernel,
    /// The block's columns of every gate of in · Wᵀ, W = [gates*H, depth]
    /// (depth: H, or an input's width): into the member's product tile
    /// (`out` unused) or, where backward reads them, into `out`'s gate
    /// columns.
    Product,
    /// The block's columns of out += in · W, W = [rows, H] (backward).
    Accumulate,
  };
  Kind kind = Kind::Kernel;
  cellrt_kernel_fn kernel = nullptr;
  std::vector<TiledArg> args;
  const float *weight = nullptr;
  int64_t gates = 0, weightRows = 0, depth = 0;
  TiledArg in, out;
  bool intoTile = false;
  /// Product: where the caller's PackedWeights keep this weight's panels,
  /// and the weight's index in the plan (null: packed per call).
  PackedPanels *panels = nullptr;
  int64_t weightIndex = 0;
};

/// Everything the tiled steps of one call read and write.
struct TiledSteps {
  std::vector<TiledPhase> phases;
  /// The dim the blocks split (every state's length) and the kernels' dims
  /// with it replaced by the block width.
  std::string hiddenDim;
  std::vector<int64_t> dims;
  const int32_t *lengths = nullptr;
  int64_t steps = 0, batch = 0, hidden = 0, block = 0;
  /// Backward: from the last step down.
  bool reverse = false;
  /// A plan in bf16 precision: the products round both operands to
  /// bfloat16 and sum in f32, as the per-step schedule's do, on libxsmm's
  /// bf16 kernels (weights packed in VNNI pairs).
  bool bf16 = false;
  /// The four double-buffered arrays (TiledArg::Slot), [batch, hidden] each
  /// per state: after the call the values of the last step are in pairs 1
  /// and 3 when `steps` is odd (the caller swaps), else in 0 and 2.
  std::vector<float *> slots[4];
  /// Backward: the outgoing state gradients (pair 3) start every step at 0.
  bool zeroOutgoing = false;
  /// The caller's products of inputs (`pre gemm`) that the steps compute
  /// instead, a step's rows per block into the member's tile: the caller
  /// does not run these.
  std::vector<const void *> absorbed;
  bool absorbs(const void *operation) const {
    return std::find(absorbed.begin(), absorbed.end(), operation) !=
           absorbed.end();
  }
};

/// Which calls take the tiled schedule, where it applies (and libxsmm was
/// found at build time).
enum class TiledMode {
  /// Never.
  Off,
  /// Every call.
  On,
  /// Where it was measured faster (bench/README.md): every call on a team
  /// of two or more threads, and inference on one. A one-thread training
  /// call keeps the default schedule: the tiled backward's M = 64
  /// accumulations run 4-5% slower there than one whole-row GEMM per step.
  Auto,
};

/// The mode: CELLRT_TILED_STEPS=0 is Off, 1 is On, unset (or anything
/// else) Auto, until setTiledSteps decides.
TiledMode tiledStepsMode();

/// Whether a call (training: one that records a tape, or its backward)
/// should take the tiled schedule in the current mode and thread count.
bool tiledStepsWanted(bool training);

/// Whether cellrt was built with libxsmm, i.e. whether any call can tile.
bool tiledStepsAvailable();

/// Overrides CELLRT_TILED_STEPS for the calls that start afterwards (tests
/// compare both schedules in one process); without libxsmm nothing tiles.
void setTiledSteps(TiledMode mode);

/// The block width for `hidden` hidden units (64, 32, 16 or 8, at least two
/// blocks), or 0 where the schedule does not apply.
int64_t tiledBlock(int64_t hidden);

/// What running a description prepares: its micro-kernels and each team
/// member's buffers (TiledSteps.cpp).
struct TiledRun;

/// Runs every step of `steps` on the kernel pool's threads. It fails only
/// before the first step (no micro-kernel for a shape), and the caller
/// then runs the default schedule. With `kept`, what the run prepares is
/// kept there for the next run of the same description (the same object,
/// its shape unchanged; its arrays, weights and panels may change).
Status runTiledSteps(const TiledSteps &steps,
                     std::shared_ptr<TiledRun> *kept = nullptr);

/// Tests: while set, runTiledSteps fails as it would without a micro-kernel
/// for the shape, so that the callers' fallback runs.
void failTiledStepsForTesting(bool fail);

/// How many calls have run tiled in this process (tests check the schedule
/// was taken).
int64_t tiledStepCalls();

/// How many calls wanted the tiled steps and fell back to the default
/// schedule (tests check that a fallback ran).
int64_t tiledStepFailures();

/// How many weights those calls packed into panels (tests check that
/// PackedWeights keep them).
int64_t tiledPanelPacks();

/// How many of those calls prefetched their products' panels (a team of
/// one multiplying 32 rows or more; tests check that the prefetching
/// kernels ran).
int64_t tiledPrefetchingCalls();

} // namespace cellrt::detail

#endif // CELLRT_TILEDSTEPS_H
