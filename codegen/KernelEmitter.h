//===- KernelEmitter.h - One fused region as a kernel function --*- C++ -*-===//
//
// Turns one `cell.fused` region into the body of a kernel function with the
// uniform ABI of cellrt/Kernel.h: a loop (CPU) or a thread (GPU) per row, and
// per row one element loop per output length that evaluates the whole
// expression tree per element. lower-to-loops drives it.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_CODEGEN_KERNELEMITTER_H
#define CELLC_CODEGEN_KERNELEMITTER_H

#include "codegen/Codegen.h"
#include "cellrt/DimExpr.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <map>
#include <string>
#include <vector>

namespace cellc {

/// Operations that read or write whole rows rather than one element.
bool isWholeVector(mlir::Operation *op);

/// Fills `func` (entry block created, signature of cellrt_kernel_fn) with
/// the kernel of `fused`; `scan`: its whole-sequence form; `gpu`: one thread
/// per row, scratch from the launcher.
void emitKernel(mlir::cell::FusedOp fused, mlir::func::FuncOp func,
                const std::vector<std::string> &dims, unsigned numStates,
                bool scan, bool gpu);

/// A row-local scratch buffer a kernel needs: a scan kernel's current or
/// next state, or a value a whole-vector operation reads or writes. On the
/// CPU kernels allocate them; on the GPU the launcher passes one
/// [rows, LEN] buffer per slot after the arguments (plan: `scratch K ...`).
struct ScratchSlot {
  enum Kind { CurrentState, NextState, Value } kind;
  mlir::Value value;
  mlir::Type type;
};

/// The scratch slots of the kernel of `fused` (its scan form if `scan`), in
/// the order the kernel and the plan use.
llvm::SmallVector<ScratchSlot> collectScratch(mlir::cell::FusedOp fused,
                                              bool scan, unsigned numStates);

} // namespace cellc

#endif // CELLC_CODEGEN_KERNELEMITTER_H
