//===- CellOps.h - Operations of the cell dialect ---------------*- C++ -*-===//

#ifndef CELLC_IR_CELLOPS_H
#define CELLC_IR_CELLOPS_H

#include "ir/CellDialect.h"
#include "ir/CellTypes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::cell {
class YieldOp;
class FusedOp;
class CellOp;
} // namespace mlir::cell

#define GET_OP_CLASSES
#include "ir/CellOps.h.inc"

namespace mlir::cell {
/// The length of a vector type as a dimension expression.
std::string getLengthText(Type vecType);
} // namespace mlir::cell

#endif // CELLC_IR_CELLOPS_H
