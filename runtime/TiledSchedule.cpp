//===- TiledSchedule.cpp - A call's steps as tiles, where they pay --------===//
//
// On the CPU, a call whose steps tile (Execution::describeTiledSteps, in
// ExecutionTiled.cpp) runs them on one team of threads, block by block
// (TiledSteps.h); a call that does not gain from it (too few steps, a mode
// or thread count that keeps the default) or that libxsmm cannot tile
// runs StepSchedule instead, with every product the tiles would have
// absorbed.
//
//===----------------------------------------------------------------------===//

#include "Execution.h"
#include "Schedules.h"

using namespace cellrt;

namespace cellrt::detail {

Status TiledSchedule::forward() {
  if (!call.tilesPay())
    return StepSchedule(call).forward();
  // The shape's description, made once; each call points it at its own
  // arrays.
  Executable &work = call.work;
  if (!work.tiledForward) {
    TiledSteps described;
    work.tiledForward.emplace();
    if (call.describeTiledSteps(described, /*backwardPass=*/false))
      work.tiledForward->emplace(std::move(described));
  }
  if (!*work.tiledForward)
    return StepSchedule(call).forward();
  TiledSteps &tiled = **work.tiledForward;
  call.refreshTiledSteps(tiled);
  StepSchedule steps(call);
  if (Status status = steps.runSequence(&tiled); !status.ok())
    return status;
  if (runTiledSteps(tiled, &work.tiledRun).ok()) {
    // Inference states are double buffers that swapped every step.
    if (!call.training && call.maxLength % 2)
      for (size_t i = 0; i < call.plan.states.size(); ++i)
        std::swap(call.work.currentStates[i], call.work.nextStates[i]);
    return call.finish();
  }
  // The tiles fail before their first step: the products they would have
  // computed per step run now, over all rows.
  if (Status status = steps.runSequence(&tiled, /*absorbedOnes=*/true);
      !status.ok())
    return status;
  return steps.runSteps();
}

Status TiledSchedule::backwardSteps() {
  TiledSteps tiled;
  if (!call.tilesPay() ||
      !call.describeTiledSteps(tiled, /*backwardPass=*/true) ||
      !runTiledSteps(tiled).ok())
    return StepSchedule(call).backwardSteps();
  if (call.maxLength % 2)
    for (size_t i = 0; i < call.plan.states.size(); ++i)
      std::swap(call.grads.dnext[i], call.grads.dstate[i]);
  return Status::success();
}

} // namespace cellrt::detail
