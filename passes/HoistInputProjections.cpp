//===- HoistInputProjections.cpp - Move input-only work out of the loop ---===//
//
// Work that depends on no state is the same whether it runs inside the
// recurrence or before it, but before it the T per-step products of a batch
// become one GEMM over T*B rows, which runs near the machine's peak.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::cell {
#define GEN_PASS_DEF_HOISTINPUTPROJECTIONS
#include "passes/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {

/// Finds the body operations to hoist: those whose every operand is an
/// input, a parameter, a constant or another hoisted result, and that depend
/// on at least one input (a lone constant is cheaper to keep in the kernel).
llvm::SetVector<Operation *> findHoistable(CellOp cell) {
  llvm::DenseSet<Value> inputOnly, dependsOnInput;
  for (Value arg : cell.getInputArgs()) {
    inputOnly.insert(arg);
    dependsOnInput.insert(arg);
  }
  for (Value arg : cell.getParamArgs())
    inputOnly.insert(arg);

  llvm::SetVector<Operation *> hoistable;
  for (Operation &op : cell.getBodyBlock()->without_terminator()) {
    bool allInputOnly = llvm::all_of(op.getOperands(), [&](Value v) {
      return inputOnly.contains(v);
    });
    if (!allInputOnly)
      continue;
    for (Value result : op.getResults())
      inputOnly.insert(result);
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return dependsOnInput.contains(v); })) {
      for (Value result : op.getResults())
        dependsOnInput.insert(result);
      hoistable.insert(&op);
    }
  }
  return hoistable;
}

struct HoistInputProjectionsPass
    : cell::impl::HoistInputProjectionsBase<HoistInputProjectionsPass> {
  void runOnOperation() override {
    CellOp cell = getOperation();
    if (cell.getPrologueBlock())
      return; // Already hoisted.
    llvm::SetVector<Operation *> hoistable = findHoistable(cell);
    if (hoistable.empty())
      return;

    Block *body = cell.getBodyBlock();
    OpBuilder builder(cell.getContext());
    Block *prologue = createPrologue(cell, builder);

    // Clone the hoisted operations (and the constants they use) in order.
    IRMapping mapping;
    for (auto [bodyArg, prologueArg] :
         llvm::zip(llvm::concat<BlockArgument>(cell.getInputArgs(),
                                               cell.getParamArgs()),
                   prologue->getArguments()))
      mapping.map(bodyArg, prologueArg);
    builder.setInsertionPointToEnd(prologue);
    for (Operation *op : hoistable) {
      for (Value operand : op->getOperands())
        if (!mapping.contains(operand))
          builder.clone(*operand.getDefiningOp(), mapping);
      builder.clone(*op, mapping);
    }

    // Values still used in the body cross over as new body arguments.
    SmallVector<Value> escaping;
    for (Operation *op : hoistable)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !hoistable.contains(user);
            }))
          escaping.push_back(result);
    SmallVector<Value> yielded;
    for (Value value : escaping) {
      BlockArgument arg = body->addArgument(value.getType(), value.getLoc());
      value.replaceAllUsesWith(arg);
      yielded.push_back(mapping.lookup(value));
    }
    builder.create<YieldOp>(cell.getLoc(), yielded);

    for (Operation *op : llvm::reverse(hoistable))
      op->erase();
    // Constants only the hoisted work used were cloned; drop the originals.
    for (auto constant : llvm::make_early_inc_range(body->getOps<ConstantOp>()))
      if (constant->use_empty())
        constant.erase();
  }

  /// The prologue takes the inputs and the parameters.
  Block *createPrologue(CellOp cell, OpBuilder &builder) {
    SmallVector<Type> types;
    SmallVector<Location> locs;
    for (BlockArgument arg : llvm::concat<BlockArgument>(cell.getInputArgs(),
                                                         cell.getParamArgs())) {
      types.push_back(arg.getType());
      locs.push_back(arg.getLoc());
    }
    return builder.createBlock(&cell.getPrologue(), {}, types, locs);
  }
};

} // namespace
