//===- Passes.h - cellc's transformation passes -----------------*- C++ -*-===//

#ifndef CELLC_PASSES_PASSES_H
#define CELLC_PASSES_PASSES_H

#include "ir/CellOps.h"
#include "cellrt/DimExpr.h"
#include "mlir/Pass/Pass.h"

namespace mlir::cell {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// True for the operations that fuse-elementwise groups into kernels.
bool isElementwise(Operation *op);

} // namespace mlir::cell

#endif // CELLC_PASSES_PASSES_H
