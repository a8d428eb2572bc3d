//===- ScanSchedule.cpp - Every step of a call in one scan kernel ---------===//
//
// A plan with a `scan` operation (a cell whose state is updated
// element-wise, with no recurrent product: SRU, SR-NMT) runs its sequence
// operations (the products of inputs) over all rows, then the scan kernel
// once over every step of every row. A decoding step's products may run as
// tiles first (Execution::describeScanProducts).
//
//===----------------------------------------------------------------------===//

#include "Execution.h"
#include "Schedules.h"

using namespace cellrt;

namespace cellrt::detail {

/// The shape's tiled products, described by the first call that wanted
/// them and pointed at this call's arrays; null where they do not tile.
TiledSteps *ScanSchedule::tiledProducts() {
  if (!call.scanTilesPay())
    return nullptr;
  Executable &work = call.work;
  if (!work.tiledForward) {
    TiledSteps described;
    work.tiledForward.emplace();
    if (call.describeScanProducts(described))
      work.tiledForward->emplace(std::move(described));
  }
  if (!*work.tiledForward)
    return nullptr;
  TiledSteps &tiled = **work.tiledForward;
  call.refreshTiledSteps(tiled);
  return &tiled;
}

Status ScanSchedule::forward() {
  TiledSteps *tiled = tiledProducts();
  bool tiles = tiled && runTiledSteps(*tiled, &call.work.tiledRun).ok();
  if (Status status = StepSchedule(call).runSequence(tiles ? tiled : nullptr);
      !status.ok())
    return status;
  for (const BoundOperation &bound : call.scanOperations)
    if (Status status = call.runScan(bound); !status.ok())
      return status;
  // Inference: the scan wrote the final states into the next buffers.
  if (!call.training)
    for (size_t i = 0; i < call.plan.states.size(); ++i)
      std::swap(call.work.currentStates[i], call.work.nextStates[i]);
  return call.finish();
}

} // namespace cellrt::detail
