//===- BuildSchedule.h - A lowered cell's schedule --------------*- C++ -*-===//
//
// cell-build-schedule and the calls behind it: a cell that has been through
// fuse-elementwise and lower-to-loops becomes a `sched.program`, which
// converts to the runtime's plan.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_SCHEDULE_BUILDSCHEDULE_H
#define CELLC_SCHEDULE_BUILDSCHEDULE_H

#include "cellrt/Plan.h"
#include "ir/CellOps.h"
#include "schedule/Schedule.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

namespace mlir::cell {
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "schedule/Passes.h.inc"
} // namespace mlir::cell

namespace cellc {

/// The schedule of a cell that has been through fuse-elementwise and
/// lower-to-loops: a `sched.program` built at `builder`'s insertion point
/// (cell-build-schedule builds one per cell at the end of the module).
mlir::FailureOr<mlir::sched::ProgramOp> buildSchedule(mlir::cell::CellOp cell,
                                                      mlir::OpBuilder &builder);

/// The plan of a cell that has been through fuse-elementwise and
/// lower-to-loops (docs/plan-format.md), checked by the runtime's own
/// rules (cellrt::validatePlan); a plan they refuse is an error on the cell
/// (a cellc bug).
mlir::FailureOr<cellrt::Plan> emitPlan(mlir::cell::CellOp cell);

/// Marks every cell of the module to multiply reading bfloat16 or f32
/// (`cellc --precision`): the `cell.precision` attribute, which
/// buildSchedule reads into the program and so the plan's `precision` line.
/// Unmarked cells are f32.
void setProductPrecision(mlir::ModuleOp module, llvm::StringRef precision);
/// The precision a cell is marked with (f32 when unmarked); an error on the
/// cell for a value other than "f32" or "bf16".
mlir::FailureOr<cellrt::Precision> productPrecision(mlir::cell::CellOp cell);

} // namespace cellc

#endif // CELLC_SCHEDULE_BUILDSCHEDULE_H
