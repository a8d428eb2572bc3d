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

#include "ir/KernelAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <map>
#include <string>
#include <vector>

namespace cellc {

/// Fills `func` (entry block created, signature of cellrt_kernel_fn) with
/// the kernel of `fused`; `scan`: its whole-sequence form; `gpu`: one thread
/// per row, scratch from the launcher.
void emitKernel(mlir::cell::FusedOp fused, mlir::func::FuncOp func,
                const std::vector<std::string> &dims, unsigned numStates,
                bool scan, bool gpu);

} // namespace cellc

#endif // CELLC_CODEGEN_KERNELEMITTER_H
