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
/// The largest dimension: the elements of one vector, and a dimension's
/// value when every symbol is 1 (the front end's limits::kMaxDimension).
constexpr int64_t kMaxDimension = (int64_t(1) << 31) - 1;

/// What keeps a dimension expression from being the length of a vector or
/// matrix. Every symbol is a size of at least 1, so a length must be at
/// least 1 for all of them, and at most kMaxDimension when each is 1.
enum class DimensionProblem {
  None,
  /// At most 0 for every size (`0`, `-H`, `H-H`).
  NeverPositive,
  /// At most 0 for some sizes (`1-H`, `2*H-I`, `H-1` at H = 1).
  NotPositiveForAllSizes,
  /// More than kMaxDimension when every symbol is 1.
  TooLarge,
};
DimensionProblem findDimensionProblem(const cellc::DimExpr &dim);

/// The value of `dim` when every symbol is 1: its smallest when no
/// coefficient is negative.
int64_t valueAtOnes(const cellc::DimExpr &dim);

/// Reports `dim` through `emitError` if it has a DimensionProblem.
LogicalResult verifyDimension(function_ref<InFlightDiagnostic()> emitError,
                              const cellc::DimExpr &dim);

/// Parses a quoted dimension expression into its canonical form; reports
/// malformed text at its location.
FailureOr<cellc::DimExpr> parseDimExpr(AsmParser &parser);
/// Prints the canonical text in quotes: `"3*H+I"`.
void printDimExpr(AsmPrinter &printer, const cellc::DimExpr &expr);
} // namespace mlir::cell

#define GET_ATTRDEF_CLASSES
#include "ir/CellAttributes.h.inc"

#endif // CELLC_IR_CELLATTRIBUTES_H
