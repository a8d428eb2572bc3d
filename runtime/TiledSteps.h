//===- TiledSteps.h - Gate math on the recurrent product's tiles -*- C++ -*-===//
//
// Issue #16, item 2: the inference forward of a recurrent cell as oneDNN's
// RNN primitive schedules it. One team of the kernel pool's threads lives
// for the whole sequence; each member owns blocks of hidden units and per
// step computes its blocks of the recurrent product for every gate
// (libxsmm, the weight's rows packed per block once per call), runs the
// step kernel on each block while it is in cache (dims H := the block,
// every argument moved to the block's columns), and the team meets once per
// step, or once per stage where a second product reads what the first
// stage's kernel computed (GRU's U_h (r * h)). The per-step GEMM
// call over all of H, the separate kernel pass over its output and the
// hand-off between oneDNN's OpenMP team and the kernel pool are gone.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_TILEDSTEPS_H
#define CELLRT_TILEDSTEPS_H

#include "cellrt/Kernel.h"
#include "cellrt/Plan.h"

#include <vector>

namespace cellrt::detail {

/// One argument of a step kernel, relative to a block's first column.
struct TiledArg {
  enum class Kind {
    /// base + step * stepAdvance (a buffer, the output, an input, a param).
    Array,
    /// The current or next value of state `index` (swapped every step).
    State,
    NextState,
    /// Gate `index` of the block's product of stage `stage`.
    Product,
  };
  Kind kind = Kind::Array;
  float *base = nullptr;
  int64_t stepAdvance = 0;
  int64_t index = 0, stage = 0;
  /// The row stride (0: a param broadcast to every row).
  int64_t stride = 0;
};

/// One product and the kernel after it. The product reads whole rows of a
/// state or of an array an earlier stage's kernel wrote: the team meets
/// after every stage.
struct TiledStage {
  cellrt_kernel_fn kernel = nullptr;
  std::vector<TiledArg> args;
  /// The stacked weight [gates * hidden, hidden].
  const float *weight = nullptr;
  int64_t gates = 0;
  /// The product's input: state `inputState`, or (-1) `input` + step *
  /// `inputAdvance` with rows `inputStride` apart.
  int64_t inputState = -1;
  const float *input = nullptr;
  int64_t inputAdvance = 0, inputStride = 0;
};

/// Everything the tiled steps of one call read and write.
struct TiledForward {
  std::vector<TiledStage> stages;
  /// The kernels' dims with the hidden dim replaced by the block width.
  std::vector<int64_t> dims;
  const int32_t *lengths = nullptr;
  int64_t steps = 0, batch = 0, hidden = 0, block = 0;
  /// Per state, [batch, hidden] each: the values before the first step and
  /// the other half of each double buffer. After the call the final states
  /// are in `current` when `steps` is even, else in `next`.
  std::vector<float *> current, next;
};

/// Whether calls may take the tiled schedule: CELLRT_TILED_STEPS=1 turns it
/// on where it applies (and libxsmm was found at build time); off by
/// default until it is measured faster on every workload it covers.
bool tiledStepsEnabled();

/// The block width for `hidden` hidden units (64, 32, 16 or 8, at least two
/// blocks), or 0 where the schedule does not apply.
int64_t tiledBlock(int64_t hidden);

/// Runs every step of `forward` on the kernel pool's threads.
Status runTiledForward(const TiledForward &forward);

/// How many calls have run tiled in this process (tests check the schedule
/// was taken).
int64_t tiledForwardCalls();

} // namespace cellrt::detail

#endif // CELLRT_TILEDSTEPS_H
