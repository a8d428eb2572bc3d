//===- Parallel.h - Rows of a kernel call split across threads --*- C++ -*-===//
//
// A kernel's rows are independent, so a large call is split into one chunk
// per thread. The pool's threads wait on a condition variable between
// calls, after spinning up to CELLRT_SPIN_US (50 µs) when calls have been
// coming back to back; the caller's thread runs the first chunk itself. oneDNN's GEMMs
// keep their own OpenMP threads: run with OMP_WAIT_POLICY=PASSIVE so those
// do not spin while the kernels run, or with CELLRT_POOL=openmp, which runs
// the chunks and teams on the OpenMP threads instead (OpenMpTeam.h).
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_PARALLEL_H
#define CELLRT_PARALLEL_H

#include <cstdint>
#include <functional>

namespace cellrt::detail {

/// Runs body(begin, end) over [0, rows) in `threads()` chunks when `work`
/// (about rows x elements per row) is worth it, else in one call (always
/// in one call from inside a chunk or member of the pool's).
void parallelRows(int64_t rows, int64_t work,
                  const std::function<void(int64_t, int64_t)> &body);

/// The number of threads kernels use.
int threads();

/// Runs body(member) for every member of a team of min(threads(),
/// maxMembers), each on its own thread and all at once (members may wait
/// for each other); prepare(team) runs first, with the size decided once.
/// From inside a chunk or member of the pool's, a team of one.
void runTeam(int64_t maxMembers, const std::function<void(int64_t)> &prepare,
             const std::function<void(int64_t)> &body);

/// Tests: a pool worker sleeps `microseconds` after waking, before it
/// takes its chunk (0: none); and how many chunks workers have taken
/// after a job that came within the spin budget of the one before (after
/// which they spin for the next).
void setPoolWakeDelayForTesting(int64_t microseconds);
/// Tests: a woken pool worker moves onto its caller's core first, as the
/// scheduler may put it.
void setPoolPileUpForTesting(bool pileUp);
int64_t poolChunksAfterQuickJobs();

} // namespace cellrt::detail

#endif // CELLRT_PARALLEL_H
