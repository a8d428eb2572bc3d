//===- CellDialect.cpp - The cell dialect ---------------------------------===//

#include "ir/CellDialect.h"
#include "ir/CellOps.h"
#include "ir/CellTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cell;

#include "ir/CellDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "ir/CellTypes.cpp.inc"

LogicalResult VecType::verify(function_ref<InFlightDiagnostic()> emitError,
                              cellc::DimExpr length) {
  return verifyDimension(emitError, length);
}

LogicalResult MatType::verify(function_ref<InFlightDiagnostic()> emitError,
                              cellc::DimExpr rows, cellc::DimExpr cols) {
  if (failed(verifyDimension(emitError, rows)))
    return failure();
  return verifyDimension(emitError, cols);
}

void CellDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/CellOps.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "ir/CellTypes.cpp.inc"
      >();
  registerAttributes();
}
