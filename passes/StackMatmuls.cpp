//===- StackMatmuls.cpp - One GEMM for products sharing a vector ----------===//
//
// A GEMM's cost is dominated by streaming its weight and its operand; three
// products of the same operand read that operand three times and launch
// three GEMMs. Stacking the weights' rows does the same work in one call.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::cell {
#define GEN_PASS_DEF_STACKMATMULS
#include "passes/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {

/// Replaces the products of one vector by a single stacked product placed
/// where the first of them was: the vector dominates that point already.
void stackGroup(ArrayRef<MatVecOp> products) {
  MatVecOp first = products.front();
  SmallVector<Value> matrices;
  SmallVector<Type> resultTypes;
  SmallVector<Location> locs;
  for (MatVecOp product : products) {
    matrices.push_back(product.getMatrix());
    resultTypes.push_back(product.getType());
    locs.push_back(product.getLoc());
  }
  OpBuilder builder(first);
  auto stacked = builder.create<StackedMatVecOp>(
      builder.getFusedLoc(locs), resultTypes, matrices, first.getVector());
  for (auto [original, result] : llvm::zip(products, stacked.getResults())) {
    MatVecOp product = original;
    product.getResult().replaceAllUsesWith(result);
    product.erase();
  }
}

void stackBlock(Block &block) {
  llvm::MapVector<Value, SmallVector<MatVecOp>> byVector;
  for (auto product : block.getOps<MatVecOp>())
    byVector[product.getVector()].push_back(product);
  for (auto &[vector, products] : byVector)
    if (products.size() > 1)
      stackGroup(products);
}

struct StackMatmulsPass : cell::impl::StackMatmulsBase<StackMatmulsPass> {
  void runOnOperation() override {
    CellOp cell = getOperation();
    if (Block *prologue = cell.getPrologueBlock())
      stackBlock(*prologue);
    stackBlock(*cell.getBodyBlock());
  }
};

} // namespace
