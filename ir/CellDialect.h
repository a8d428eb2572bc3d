//===- CellDialect.h - The cell dialect -------------------------*- C++ -*-===//

#ifndef CELLC_IR_CELLDIALECT_H
#define CELLC_IR_CELLDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ir/CellDialect.h.inc"

#endif // CELLC_IR_CELLDIALECT_H
