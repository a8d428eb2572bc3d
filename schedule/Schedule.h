//===- Schedule.h - The schedule dialect --------------------------*- C++
//-*-===//
//
// The `sched` dialect (ScheduleOps.td): a compiled cell's plan as IR, and
// its conversion to the runtime's cellrt::Plan, whose text is what objects
// carry.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_SCHEDULE_SCHEDULE_H
#define CELLC_SCHEDULE_SCHEDULE_H

#include "cellrt/Plan.h"
#include "ir/CellAttributes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"

#include "schedule/ScheduleDialect.h.inc"
#include "schedule/ScheduleEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "schedule/ScheduleAttributes.h.inc"

#define GET_OP_CLASSES
#include "schedule/ScheduleOps.h.inc"

namespace mlir::sched {

/// The runtime's plan of `program`, unchecked (a reference to something
/// undeclared keeps its name, which the runtime's check refuses).
cellrt::Plan toPlan(ProgramOp program);

/// The runtime's plan of `program`, checked by the runtime's own rules
/// (cellrt::validatePlan); a plan they refuse is an error on the program.
FailureOr<cellrt::Plan> checkedPlan(ProgramOp program);

/// The schedule's name for a runtime reference kind, and back.
RefKind refKindOf(cellrt::Ref::Kind kind);
cellrt::Ref::Kind runtimeKindOf(RefKind kind);

} // namespace mlir::sched

#endif // CELLC_SCHEDULE_SCHEDULE_H
