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
#include "cellrt/InitScheme.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/Hashing.h"

namespace cellc {
/// Found by ADL when types and attributes hash their parameters.
llvm::hash_code hash_value(const DimExpr &expr);
} // namespace cellc

namespace cellrt {
/// Found by ADL when the init attribute hashes its scheme.
llvm::hash_code hash_value(const InitScheme &scheme);
} // namespace cellrt

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

/// Parses `uniform 5.0e-02`, `orthogonal`, ...: a scheme's name and, for
/// constant, uniform and normal, its number.
FailureOr<cellrt::InitScheme> parseInitScheme(AsmParser &parser);
/// Prints a scheme so that parseInitScheme reads it back exactly.
void printInitScheme(AsmPrinter &printer, const cellrt::InitScheme &scheme);

/// Reports through `emitError` why param `name` of `rank` dimensions cannot
/// start as `init` (the runtime's rules, cellrt/InitScheme.h).
LogicalResult verifyParamInit(function_ref<InFlightDiagnostic()> emitError,
                              StringRef name, Attribute init, size_t rank);
} // namespace mlir::cell

#define GET_ATTRDEF_CLASSES
#include "ir/CellAttributes.h.inc"

#endif // CELLC_IR_CELLATTRIBUTES_H
