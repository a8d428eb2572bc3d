//===- CellTypes.h - Types of the cell dialect ------------------*- C++ -*-===//

#ifndef CELLC_IR_CELLTYPES_H
#define CELLC_IR_CELLTYPES_H

#include "ir/CellAttributes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "ir/CellTypes.h.inc"

#endif // CELLC_IR_CELLTYPES_H
