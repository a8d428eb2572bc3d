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
#include "mlir/Interfaces/SideEffectInterfaces.h"
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

bool isProduct(Operation *op) { return isa<MatVecOp, StackedMatVecOp>(op); }

/// Where every product of the body is hoisted, what stays is element-wise
/// and cell-time-scan runs it as one kernel over all steps. Element-wise
/// input work in the prologue would then write each of its results over
/// all T*B rows for that kernel to read back (SRU: the gates, 4*H floats a
/// row each way); left in the body, the scan reads the projections once.
/// So hoist only the products there, with the work they read.
void keepOnlyProductsForAScan(CellOp cell,
                              llvm::SetVector<Operation *> &hoistable) {
  for (Operation &op : cell.getBodyBlock()->without_terminator())
    if (isProduct(&op) && !hoistable.contains(&op))
      return; // A product of the state: steps alternate with GEMMs anyway.
  llvm::DenseSet<Operation *> needed;
  for (Operation *op : llvm::reverse(hoistable))
    if (isProduct(op) || needed.contains(op))
      for (Value operand : op->getOperands())
        if (Operation *definition = operand.getDefiningOp())
          needed.insert(definition);
  hoistable.remove_if([&](Operation *op) {
    return !isProduct(op) && !needed.contains(op);
  });
}

/// Clones `op` into the prologue after the work it reads that is not there
/// yet: params-and-constants-only values (`2 * b` in `x + 2 * b`), however
/// deep. Cloning only the direct operand's definition once left `2` in the
/// body: "using value defined outside the region".
void cloneWithOperands(Operation *op, OpBuilder &builder, IRMapping &mapping) {
  for (Value operand : op->getOperands())
    if (!mapping.contains(operand))
      cloneWithOperands(operand.getDefiningOp(), builder, mapping);
  builder.clone(*op, mapping);
}

struct HoistInputProjectionsPass
    : cell::impl::HoistInputProjectionsBase<HoistInputProjectionsPass> {
  void runOnOperation() override {
    CellOp cell = getOperation();
    if (cell.getPrologueBlock())
      return; // Already hoisted.
    llvm::SetVector<Operation *> hoistable = findHoistable(cell);
    keepOnlyProductsForAScan(cell, hoistable);
    if (hoistable.empty())
      return;

    Block *body = cell.getBodyBlock();
    OpBuilder builder(cell.getContext());
    Block *prologue = createPrologue(cell, builder);

    // Clone the hoisted operations (and the work they read) in order.
    IRMapping mapping;
    for (auto [bodyArg, prologueArg] :
         llvm::zip(llvm::concat<BlockArgument>(cell.getInputArgs(),
                                               cell.getParamArgs()),
                   prologue->getArguments()))
      mapping.map(bodyArg, prologueArg);
    builder.setInsertionPointToEnd(prologue);
    for (Operation *op : hoistable)
      cloneWithOperands(op, builder, mapping);

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
    // Work only the hoisted operations read was cloned; drop the originals
    // (users first).
    SmallVector<Operation *> bodyOps;
    for (Operation &op : body->without_terminator())
      bodyOps.push_back(&op);
    for (Operation *op : llvm::reverse(bodyOps))
      if (isOpTriviallyDead(op))
        op->erase();
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
