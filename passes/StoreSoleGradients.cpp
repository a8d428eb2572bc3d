//===- StoreSoleGradients.cpp - Gradients with one writer are stored ------===//
//
// Backward kernels add their results to gradient buffers, so the runtime
// zeroes every buffer before the backward pass and every kernel reads the
// zeros back. SRU's training wrote 9*H gradient columns per row that way
// (5*H since its gates stay in the scan): a pass of memset and a pass of
// reads over all T*B rows, for values that only one kernel ever writes. This pass finds those results; the kernel
// emitter stores them and the plan tells the runtime not to zero them.
//
// The ranges are the schedule builder's (codegen/BuildSchedule.cpp): a
// hoisted body argument shares its prologue value's buffer, and a vector
// param has one per-row gradient buffer per phase (the body's, the
// prologue's).
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::cell {
#define GEN_PASS_DEF_STORESOLEGRADIENTS
#include "passes/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {

/// Which gradient range a value's gradient lands in: the value whose
/// buffer holds it, and the block for vector params (one buffer per
/// phase). Values without one (inputs, states, the cell's results: caller
/// arrays that backward adds to) get no range.
using GradientRange = std::pair<Value, Block *>;

class SoleGradients {
public:
  explicit SoleGradients(CellOp cell) : cell(cell) {
    if (Block *prologue = cell.getPrologueBlock())
      for (auto [hoisted, value] :
           llvm::zip(cell.getHoistedArgs(),
                     prologue->getTerminator()->getOperands()))
        hoistedFrom[hoisted] = value;
  }

  void countWriters();
  void keepStackedProductsWhole();
  void markStored();

private:
  std::optional<GradientRange> rangeOf(Value value, Block *block);
  bool hasBuffer(Value value);
  void countWrite(Value value, Block *block) {
    if (std::optional<GradientRange> range = rangeOf(value, block))
      ++writers[*range];
  }

  CellOp cell;
  DenseMap<Value, Value> hoistedFrom;
  DenseMap<GradientRange, int> writers;
  /// Results of stacked products some of whose siblings' gradients have
  /// several writers.
  DenseSet<Value> partlyShared;
};

/// Values the plan writer allocates a buffer for: products' results and
/// kernels' results, but not the final kernel's next states and output.
bool SoleGradients::hasBuffer(Value value) {
  Operation *op = value.getDefiningOp();
  if (isa_and_nonnull<MatVecOp, StackedMatVecOp>(op))
    return true;
  auto fused = dyn_cast_or_null<FusedOp>(op);
  if (!fused || fused.getBackward())
    return false;
  return !fused.getFinal() ||
         value.cast<OpResult>().getResultNumber() > cell.getNumStates();
}

std::optional<GradientRange> SoleGradients::rangeOf(Value value,
                                                    Block *block) {
  if (Value prologueValue = hoistedFrom.lookup(value))
    value = prologueValue;
  if (hasBuffer(value))
    return GradientRange{value, nullptr};
  // A vector param of either block: its per-row gradient buffer.
  auto arg = value.dyn_cast<BlockArgument>();
  if (arg && arg.getType().isa<VecType>() &&
      llvm::is_contained(cell.getParamArgs(), arg))
    return GradientRange{arg, block};
  if (arg && arg.getOwner() == cell.getPrologueBlock()) {
    // The prologue's arguments are the inputs and then the params.
    unsigned index = arg.getArgNumber();
    if (index >= cell.getNumInputs()) {
      BlockArgument param = cell.getParamArgs()[index - cell.getNumInputs()];
      if (param.getType().isa<VecType>())
        return GradientRange{param, block};
    }
  }
  return std::nullopt;
}

void SoleGradients::countWriters() {
  cell.walk([&](Operation *op) {
    Block *block = op->getBlock();
    if (isa<MatVecOp, StackedMatVecOp>(op)) {
      // Its data gradient (`bstep gemm` / `bpre gemm`) adds to its vector's.
      countWrite(op->getOperands().back(), block);
      return;
    }
    auto fused = dyn_cast<FusedOp>(op);
    if (!fused || !fused.getBackward())
      return;
    for (Value operand :
         fused.getOperands().take_front(*fused.getNumForwardOperands()))
      countWrite(operand, block);
  });
}

/// A stacked product's results share one buffer, which the runtime zeroes
/// whole or not at all, and Cell::withInputProducts turns whole into one
/// input whose gradient the caller's array receives by adding or, where
/// kernels store it, through scratch: its results are stored all or none.
void SoleGradients::keepStackedProductsWhole() {
  cell.walk([&](StackedMatVecOp product) {
    bool allSole = llvm::all_of(product.getResults(), [&](Value result) {
      return writers.lookup(GradientRange{result, nullptr}) == 1;
    });
    if (!allSole)
      partlyShared.insert(product.getResults().begin(),
                          product.getResults().end());
  });
}

void SoleGradients::markStored() {
  cell.walk([&](FusedOp fused) {
    if (!fused.getBackward())
      return;
    SmallVector<int64_t> stored;
    for (auto [index, operand] : llvm::enumerate(fused.getOperands().take_front(
             *fused.getNumForwardOperands()))) {
      std::optional<GradientRange> range =
          rangeOf(operand, fused->getBlock());
      if (range && writers.lookup(*range) == 1 &&
          !partlyShared.contains(range->first))
        stored.push_back(index);
    }
    if (!stored.empty())
      fused.setStored(stored);
  });
}

struct StoreSoleGradientsPass
    : cell::impl::StoreSoleGradientsBase<StoreSoleGradientsPass> {
  void runOnOperation() override {
    SoleGradients gradients(getOperation());
    gradients.countWriters();
    gradients.keepStackedProductsWhole();
    gradients.markStored();
  }
};

} // namespace
