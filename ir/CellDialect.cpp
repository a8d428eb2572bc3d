//===- CellDialect.cpp - The cell dialect ---------------------------------===//

#include "ir/CellDialect.h"
#include "ir/CellOps.h"
#include "ir/CellTypes.h"
#include "ir/DimExpr.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cell;

#include "ir/CellDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "ir/CellTypes.cpp.inc"

void CellDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/CellOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "ir/CellTypes.cpp.inc"
      >();
}

/// A dimension must be a well-formed expression in canonical form, so that
/// equal lengths are equal strings and the verifiers can compare types.
static LogicalResult verifyDimText(function_ref<InFlightDiagnostic()> emitError,
                                   StringRef text) {
  std::optional<cellc::DimExpr> parsed = cellc::DimExpr::parse(text.str());
  if (!parsed)
    return emitError() << "malformed dimension '" << text << "'";
  if (parsed->str() != text)
    return emitError() << "dimension '" << text
                       << "' is not in canonical form '" << parsed->str()
                       << "'";
  return success();
}

LogicalResult VecType::verify(function_ref<InFlightDiagnostic()> emitError,
                              StringRef length) {
  return verifyDimText(emitError, length);
}

LogicalResult MatType::verify(function_ref<InFlightDiagnostic()> emitError,
                              StringRef rows, StringRef cols) {
  if (failed(verifyDimText(emitError, rows)))
    return failure();
  return verifyDimText(emitError, cols);
}
