//===- TimeScan.cpp - One kernel over all steps for element-wise recurrences -===//
//
// When no matrix product touches the state (SRU, the SR-NMT encoder unit),
// every (example, element) pair is an independent scalar recurrence. Then
// nothing needs to happen between steps and the whole time loop can run
// inside one kernel: the state stays in cache, and T kernel launches become
// one.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

namespace mlir::cell {
#define GEN_PASS_DEF_TIMESCAN
#include "passes/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {
struct TimeScanPass : cell::impl::TimeScanBase<TimeScanPass> {
  void runOnOperation() override {
    CellOp cell = getOperation();
    if (cell.hasStepProducts())
      return;
    for (FusedOp fused : cell.getBodyBlock()->getOps<FusedOp>())
      if (fused.getFinal() && !fused.getBackward())
        fused.setScan(true);
  }
};
} // namespace
