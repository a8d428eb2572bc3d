//===- Passes.h - cellc's transformation passes -----------------*- C++ -*-===//

#ifndef CELLC_PASSES_PASSES_H
#define CELLC_PASSES_PASSES_H

#include "ir/CellOps.h"
#include "ir/DimExpr.h"
#include "mlir/Pass/Pass.h"

namespace mlir::cell {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Attribute on the body's last `cell.fused`: it writes the next states and
/// the output, and masks finished sequences.
inline constexpr llvm::StringLiteral kFinalKernelAttr = "final";

/// Attribute on a backward kernel made by derive-backward.
inline constexpr llvm::StringLiteral kBackwardKernelAttr = "backward";
/// On a backward kernel: how many leading operands are the forward kernel's
/// operands (the rest are the gradients of its results).
inline constexpr llvm::StringLiteral kNumForwardOperandsAttr =
    "num_forward_operands";

/// On the body's final forward kernel when the recurrence has no product:
/// it also gets a kernel that runs all steps (cell-time-scan).
inline constexpr llvm::StringLiteral kScanKernelAttr = "scan";

/// On a backward kernel: how many operands after the forward operands are
/// activations its forward kernel saved (derive-backward save-activations).
inline constexpr llvm::StringLiteral kNumSavedAttr = "num_saved";

/// True for the operations that fuse-elementwise groups into kernels.
bool isElementwise(Operation *op);

} // namespace mlir::cell

#endif // CELLC_PASSES_PASSES_H
