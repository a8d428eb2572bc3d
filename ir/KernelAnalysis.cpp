//===- KernelAnalysis.cpp - What a fused cell's kernels need --------------===//

#include "ir/KernelAnalysis.h"

#include "llvm/ADT/DenseSet.h"

#include <set>

using namespace mlir;
using namespace mlir::cell;

std::vector<std::string> cellc::collectDims(CellOp cell) {
  std::set<std::string> names;
  auto addType = [&](Type type) {
    SmallVector<const cellc::DimExpr *> exprs;
    if (auto vec = type.dyn_cast<VecType>())
      exprs.push_back(&vec.getLength());
    if (auto mat = type.dyn_cast<MatType>())
      exprs.append({&mat.getRows(), &mat.getCols()});
    for (const cellc::DimExpr *expr : exprs)
      for (const auto &term : expr->getTerms())
        names.insert(term.first);
  };
  for (Type type : cell.getBodyBlock()->getArgumentTypes())
    addType(type);
  cell.walk([&](Operation *op) {
    for (Type type : op->getResultTypes())
      addType(type);
  });
  return {names.begin(), names.end()};
}

bool cellc::isWholeVector(Operation *op) {
  return isa<LayerNormOp, LayerNormGradOp, ConcatOp, SplitOp, SliceOp>(op);
}

SmallVector<cellc::ScratchSlot> cellc::collectScratch(FusedOp fused, bool scan,
                                                      unsigned numStates) {
  SmallVector<ScratchSlot> slots;
  if (scan)
    for (unsigned i = 0; i < numStates; ++i) {
      Type type = fused.getOperand(i).getType();
      slots.push_back({ScratchSlot::CurrentState, Value(), type});
      slots.push_back({ScratchSlot::NextState, Value(), type});
    }
  llvm::DenseSet<Value> seen;
  fused.getBody().walk([&](Operation *op) {
    if (isa<LayerNormOp, LayerNormGradOp, ConcatOp>(op) &&
        seen.insert(op->getResult(0)).second)
      slots.push_back(
          {ScratchSlot::Value, op->getResult(0), op->getResult(0).getType()});
    if (cellc::isWholeVector(op))
      for (Value operand : op->getOperands())
        if (!operand.isa<BlockArgument>() && seen.insert(operand).second)
          slots.push_back({ScratchSlot::Value, operand, operand.getType()});
  });
  return slots;
}
