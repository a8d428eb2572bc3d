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

/// Ops whose mnemonic is a function of the cell language (CellInterfaces.td).
template <typename ConcreteType>
class LanguageFunction : public OpTrait::TraitBase<ConcreteType, LanguageFunction> {};
} // namespace mlir::cell

#include "ir/Adjoints.h"
#include "ir/CellInterfaces.h.inc"

#define GET_OP_CLASSES
#include "ir/CellOps.h.inc"

namespace mlir::cell {
/// The length of `vecType`, which must be a VecType.
const cellc::DimExpr &vecLength(Type vecType);

/// The op that implements the cell language's function `name` (`sigmoid`
/// is `cell.sigmoid`), if there is one; loads the dialect.
std::optional<RegisteredOperationName>
lookupLanguageFunction(MLIRContext &context, llvm::StringRef name);

/// Every function of the language that ops implement, sorted.
std::vector<std::string> languageFunctionNames(MLIRContext &context);

/// Whether `value` rounds to a finite float32: the kernels compute in
/// float32, so a constant beyond 3.40282347e+38 is inf there.
bool isFiniteFloat32(double value);

/// `value` for messages: `1000`, `1e+30`, `+inf`, `NaN`.
std::string formatNumber(double value);
} // namespace mlir::cell

#endif // CELLC_IR_CELLOPS_H
