//===- StepSchedule.cpp - A call's operations one step after another ------===//
//
// The schedule every plan can run, on any device: the `pre` operations
// over all rows, then each step's operations for every row, the states
// swapped after each step; backward the `bstep` operations from the last
// step down. The CUDA backend runs it through its Device.
//
//===----------------------------------------------------------------------===//

#include "Execution.h"
#include "Schedules.h"

using namespace cellrt;

namespace cellrt::detail {

Status StepSchedule::forward(const TiledSteps *absorbed) {
  Status status = runSequence(absorbed);
  return status.ok() ? runSteps() : status;
}

Status StepSchedule::runSequence(const TiledSteps *tiled, bool absorbedOnes) {
  int64_t allRows = call.sizes.steps * call.sizes.batch;
  for (const BoundOperation &bound : call.sequenceOperations)
    if ((tiled && tiled->absorbs(&bound)) == absorbedOnes)
      if (Status status = call.runOperation(bound, 0, 0, allRows);
          !status.ok())
        return status;
  return Status::success();
}

Status StepSchedule::runSteps() {
  call.packStepProducts();
  for (int64_t step = 0; step < call.maxLength; ++step) {
    for (const BoundOperation &bound : call.stepOperations)
      if (Status status = call.runOperation(bound, step, 0, call.rowsPerStep);
          !status.ok())
        return status;
    if (!call.training)
      for (size_t i = 0; i < call.plan.states.size(); ++i)
        std::swap(call.work.currentStates[i], call.work.nextStates[i]);
  }
  return call.finish();
}

Status StepSchedule::backwardSteps() {
  call.packStepProducts();
  GradientSpace &grads = call.grads;
  for (int64_t step = call.maxLength - 1; step >= 0; --step) {
    for (size_t i = 0; i < call.plan.states.size(); ++i)
      call.device.zero(grads.dstate[i],
                       call.sizes.batch * call.layout.stateWidths[i]);
    for (const BoundOperation &bound : call.stepOperations)
      if (Status status = call.runOperation(bound, step, 0, call.rowsPerStep);
          !status.ok())
        return status;
    for (size_t i = 0; i < call.plan.states.size(); ++i)
      std::swap(grads.dnext[i], grads.dstate[i]);
  }
  return Status::success();
}

} // namespace cellrt::detail
