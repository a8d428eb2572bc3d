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
