//===- Passes.td - The schedule's pass ---------------------*- tablegen -*-===//

#ifndef CELL_SCHEDULE_PASSES
#define CELL_SCHEDULE_PASSES

include "mlir/Pass/PassBase.td"

def BuildSchedule : Pass<"cell-build-schedule", "::mlir::ModuleOp"> {
  let summary = "build each lowered cell's schedule: what the runtime runs";
  let description = [{
    Adds a `sched.program` for every `cell.cell` that has been through
    fuse-elementwise and lower-to-loops (kernel indices assigned), at the
    end of the module: the cell's arrays, a buffer for every value that
    crosses between operations or phases, the stacked weights, and the
    products and kernels of each phase in order; with derive-backward's
    adjoints, the backward phases and the weight and bias gradients too.
    The program verifies with the runtime's plan rules. Programs already in
    the module (read with it) are replaced: a schedule is the cell's.
  }];
  let dependentDialects = ["::mlir::sched::ScheduleDialect"];
}

#endif // CELL_SCHEDULE_PASSES
