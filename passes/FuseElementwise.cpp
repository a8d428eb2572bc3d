//===- FuseElementwise.cpp - One kernel per level of element-wise work ----===//
//
// Between two rounds of matrix products, every element-wise operation can
// run in a single pass over the batch: one kernel launch, one read of each
// operand, intermediates kept in registers. This pass finds those rounds
// ("levels") and wraps each level's work in a `cell.fused` region.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::cell {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "passes/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

bool mlir::cell::isElementwise(Operation *op) {
  return isa<ElementwiseMath, LayerNormOp, LayerNormGradOp, ConcatOp, SplitOp,
             SliceOp>(op);
}

static bool isProduct(Operation *op) {
  return isa<MatVecOp, StackedMatVecOp>(op);
}

namespace {

/// Assigns element-wise operations to kernels and products to GEMM rounds.
struct LevelAssignment {
  /// Earliest level of every value: arguments 0, element-wise results the
  /// maximum of their operands, products one more than their vector.
  DenseMap<Value, unsigned> earliest;
  /// Kernel of each element-wise operation (as late as its users allow).
  DenseMap<Operation *, unsigned> kernelOf;
  /// GEMM round of each product.
  DenseMap<Operation *, unsigned> roundOf;
  unsigned lastLevel = 0;

  void compute(Block &block) {
    for (Operation &op : block.without_terminator()) {
      unsigned level = 0;
      for (Value operand : op.getOperands())
        level = std::max(level, earliest.lookup(operand));
      if (isProduct(&op)) {
        level = earliest.lookup(op.getOperands().back()) + 1;
        roundOf[&op] = level;
      }
      for (Value result : op.getResults())
        earliest[result] = level;
      lastLevel = std::max(lastLevel, level);
    }
    // Latest placement, walking users before definitions.
    for (Operation &op : llvm::reverse(block.without_terminator())) {
      if (!isElementwise(&op))
        continue;
      unsigned latest = lastLevel;
      for (Operation *user : op.getUsers()) {
        if (isElementwise(user))
          latest = std::min(latest, kernelOf.lookup(user));
        else if (isProduct(user))
          latest = std::min(latest, roundOf.lookup(user) - 1);
      }
      kernelOf[&op] = latest;
    }
  }
};

/// Builds one `cell.fused` from `ops` (in block order) at the end of the
/// block, before its terminator. `leadingOperands` come first (the final
/// kernel's states). The results are `requiredResults` (the final kernel's
/// next states and output, passed through if computed elsewhere), then,
/// unless `onlyRequired`, every group value used outside the group.
FusedOp buildFused(Block &block, ArrayRef<Operation *> ops,
                   ArrayRef<Value> leadingOperands,
                   ArrayRef<Value> requiredResults, bool onlyRequired) {
  llvm::SmallPtrSet<Operation *, 16> inGroup(ops.begin(), ops.end());
  llvm::SetVector<Value> operands(leadingOperands.begin(),
                                  leadingOperands.end());
  auto isExternal = [&](Value value) {
    return !inGroup.contains(value.getDefiningOp()) &&
           !value.getDefiningOp<ConstantOp>();
  };
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (isExternal(operand))
        operands.insert(operand);
  // A required result computed elsewhere (a product, an argument) passes
  // through the kernel.
  for (Value result : requiredResults)
    if (isExternal(result))
      operands.insert(result);

  SmallVector<Value> results(requiredResults.begin(), requiredResults.end());
  if (!onlyRequired)
    for (Operation *op : ops)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              return !inGroup.contains(user);
            }))
          results.push_back(result);

  OpBuilder builder(block.getTerminator());
  SmallVector<Location> locs;
  for (Operation *op : ops)
    locs.push_back(op->getLoc());
  Location loc = locs.empty() ? block.getTerminator()->getLoc()
                              : builder.getFusedLoc(locs);
  SmallVector<Type> resultTypes;
  for (Value result : results)
    resultTypes.push_back(result.getType());
  auto fused = builder.create<FusedOp>(loc, resultTypes, operands.getArrayRef());
  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value operand : operands) {
    argTypes.push_back(operand.getType());
    argLocs.push_back(operand.getLoc());
  }
  Block *inner =
      builder.createBlock(&fused.getBody(), {}, argTypes, argLocs);

  IRMapping mapping;
  mapping.map(operands.getArrayRef(), inner->getArguments());
  auto cloneConstant = [&](Value value) {
    if (auto constant = value.getDefiningOp<ConstantOp>())
      if (!mapping.contains(value))
        builder.clone(*constant, mapping);
  };
  for (Operation *op : ops) {
    llvm::for_each(op->getOperands(), cloneConstant);
    builder.clone(*op, mapping);
  }
  llvm::for_each(results, cloneConstant);
  SmallVector<Value> yielded;
  for (Value result : results)
    yielded.push_back(mapping.lookup(result));
  builder.create<YieldOp>(loc, yielded);

  // Users outside the group now read the kernel's results. A value that
  // only passes through (a state read as the output, a new state computed by
  // an earlier kernel) keeps its other users: products placed before this
  // kernel read it too, and must not be made to read this kernel's result.
  Operation *terminator = block.getTerminator();
  for (auto [original, replacement] : llvm::zip(results, fused.getResults())) {
    bool passesThrough = isExternal(original);
    original.replaceUsesWithIf(replacement, [&](OpOperand &use) {
      if (passesThrough)
        return use.getOwner() == terminator;
      return !inGroup.contains(use.getOwner()) && use.getOwner() != fused;
    });
  }
  return fused;
}

/// Dead element-wise work would otherwise be computed in the last kernel.
void eraseDeadElementwise(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if ((isElementwise(&op) || isa<ConstantOp>(op)) && op.use_empty())
      op.erase();
}

void fuseBlock(Block &block, CellOp cell, bool isBody) {
  eraseDeadElementwise(block);
  LevelAssignment levels;
  levels.compute(block);

  SmallVector<SmallVector<Operation *>> kernels(levels.lastLevel + 1);
  SmallVector<SmallVector<Operation *>> rounds(levels.lastLevel + 1);
  SmallVector<Operation *> elementwise;
  for (Operation &op : block.without_terminator()) {
    if (isElementwise(&op)) {
      kernels[levels.kernelOf[&op]].push_back(&op);
      elementwise.push_back(&op);
    } else if (isProduct(&op)) {
      rounds[levels.roundOf[&op]].push_back(&op);
    }
  }

  Operation *terminator = block.getTerminator();
  for (unsigned level = 0; level <= levels.lastLevel; ++level) {
    for (Operation *product : rounds[level])
      product->moveBefore(terminator);
    bool isFinal = isBody && level == levels.lastLevel;
    if (isFinal) {
      SmallVector<Value> states(cell.getStateArgs().begin(),
                                cell.getStateArgs().end());
      SmallVector<Value> yielded(terminator->getOperands());
      FusedOp fused = buildFused(block, kernels[level], states, yielded,
                                 /*onlyRequired=*/true);
      fused.setFinal(true);
      terminator->setOperands(fused.getResults());
    } else if (!kernels[level].empty()) {
      buildFused(block, kernels[level], {}, {}, /*onlyRequired=*/false);
    }
  }

  for (Operation *op : llvm::reverse(elementwise))
    op->erase();
  for (Operation &op : llvm::make_early_inc_range(block))
    if (isa<ConstantOp>(op) && op.use_empty())
      op.erase();
}

} // namespace

struct FuseElementwisePass : cell::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    CellOp cell = getOperation();
    if (!cell.getBody().front().getOps<FusedOp>().empty())
      return; // Already fused.
    if (Block *prologue = cell.getPrologueBlock())
      fuseBlock(*prologue, cell, /*isBody=*/false);
    fuseBlock(*cell.getBodyBlock(), cell, /*isBody=*/true);
  }
};
