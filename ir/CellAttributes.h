//===- CellAttributes.h - Attributes of the cell dialect --------*- C++ -*-===//
//
// The attributes, and what the IR needs to hold a cellc::DimExpr as an
// attribute or type parameter: hashing for the storage uniquer and the
// quoted-text syntax. These live here rather than in DimExpr.h, which the
// runtime compiles without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_IR_CELLATTRIBUTES_H
#define CELLC_IR_CELLATTRIBUTES_H

#include "cellrt/DimExpr.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/Hashing.h"

namespace cellc {
/// Found by ADL when types and attributes hash their parameters.
llvm::hash_code hash_value(const DimExpr &expr);
} // namespace cellc

namespace mlir::cell {
/// Parses a quoted dimension expression into its canonical form; reports
/// malformed text at its location.
FailureOr<cellc::DimExpr> parseDimExpr(AsmParser &parser);
/// Prints the canonical text in quotes: `"3*H+I"`.
void printDimExpr(AsmPrinter &printer, const cellc::DimExpr &expr);
} // namespace mlir::cell

#define GET_ATTRDEF_CLASSES
#include "ir/CellAttributes.h.inc"

#endif // CELLC_IR_CELLATTRIBUTES_H
