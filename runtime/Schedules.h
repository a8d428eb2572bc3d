//===- Schedules.h - How a call's steps run, one class per kind -*- C++ -*-===//
//
// A bound call (Execution) runs its steps by one of three schedules, picked
// once when its operations are bound (Executable::schedule) and kept for
// every later call of the same shape:
//   - StepSchedule (StepSchedule.cpp): the operations of one step after
//     another through the Device interface: the CPU's kernels and oneDNN,
//     or a GPU's kernels and cuBLAS (cellrt/cuda). Every plan can run so.
//   - TiledSchedule (TiledSchedule.cpp): on the CPU, a step's products and
//     kernels per block of hidden units on one team of threads
//     (TiledSteps.h); it falls back to StepSchedule where a call does not
//     gain from it or cannot tile.
//   - ScanSchedule (ScanSchedule.cpp): a time-scan kernel runs every step
//     of every row in one launch (SRU, SR-NMT).
// A new schedule is a class here and a file of its own.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_SCHEDULES_H
#define CELLRT_SCHEDULES_H

#include "cellrt/Status.h"

namespace cellrt::detail {

class Execution;
struct TiledSteps;

enum class ScheduleKind { Steps, Tiled, Scan };

class StepSchedule {
public:
  explicit StepSchedule(Execution &call) : call(call) {}
  /// The sequence operations (but those `absorbed` by tiles), then every
  /// step.
  Status forward(const TiledSteps *absorbed = nullptr);
  /// The sequence operations over all rows: those `tiled` does not absorb
  /// (every one without it) or, with `absorbedOnes`, only those it does.
  Status runSequence(const TiledSteps *tiled, bool absorbedOnes = false);
  /// The step operations from the first step to the longest sequence's
  /// last, then the end of the call.
  Status runSteps();
  /// The backward step operations from the last step down to the first.
  Status backwardSteps();

private:
  Execution &call;
};

class TiledSchedule {
public:
  explicit TiledSchedule(Execution &call) : call(call) {}
  Status forward();
  Status backwardSteps();

private:
  Execution &call;
};

class ScanSchedule {
public:
  explicit ScanSchedule(Execution &call) : call(call) {}
  Status forward();

private:
  TiledSteps *tiledProducts();

  Execution &call;
};

} // namespace cellrt::detail

#endif // CELLRT_SCHEDULES_H
