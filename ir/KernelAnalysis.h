//===- KernelAnalysis.h - What a fused cell's kernels need ------*- C++ -*-===//
//
// Queries on the cell dialect that both the kernel emitter (codegen/) and
// the schedule builder (schedule/) ask: the dims array every kernel gets
// and the row-local scratch a kernel needs. They live with the IR so that
// neither of the two depends on the other.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_IR_KERNELANALYSIS_H
#define CELLC_IR_KERNELANALYSIS_H

#include "ir/CellOps.h"

#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace cellc {

/// The symbolic dimensions a cell's types mention, sorted: the order of the
/// `dims` array every kernel of the cell receives.
std::vector<std::string> collectDims(mlir::cell::CellOp cell);

/// Operations that read or write whole rows rather than one element.
bool isWholeVector(mlir::Operation *op);

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

#endif // CELLC_IR_KERNELANALYSIS_H
