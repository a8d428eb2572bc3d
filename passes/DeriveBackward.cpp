//===- DeriveBackward.cpp - Reverse-mode gradients of fused kernels -------===//
//
// Every forward kernel F (a `cell.fused`) gets a backward kernel G right
// after it: G takes F's operands and the gradients of F's results
// (`cell.cotangent`) and returns the gradients of F's operands. G recomputes
// F's intermediates from F's operands instead of loading them: element-wise
// work is cheap next to memory traffic, and only GEMM outputs and kernel
// operands need to be kept per step. The products' gradients (data and
// weight GEMMs) need no kernels; the plan derives them from the products.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::cell {
#define GEN_PASS_DEF_DERIVEBACKWARD
#include "passes/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {

/// Accumulates adjoints while walking a cloned forward region backwards;
/// element-wise ops add theirs through their own rules (ElementwiseMath).
class AdjointBuilder : public AdjointEmitter {
public:
  AdjointBuilder(OpBuilder &builder, Location loc)
      : AdjointEmitter(builder, loc) {}

  Value lookup(Value value) { return adjoints.lookup(value); }

  /// adjoint(value) += gradient
  void accumulate(Value value, Value gradient) override {
    if (Value existing = adjoints.lookup(value))
      gradient = create<AddOp>(existing, gradient);
    adjoints[value] = gradient;
  }

  /// The adjoint of `value`, or zeros when nothing reached it.
  Value adjointOrZero(Value value) {
    if (Value existing = adjoints.lookup(value))
      return existing;
    return constant(value.getType(), 0.0);
  }

  /// Adds the adjoints of `op`'s operands; `result` stands for the op's
  /// result when the forward kernel saved it.
  void propagate(Operation *op, Value result = Value());

private:
  DenseMap<Value, Value> adjoints;
};

void AdjointBuilder::propagate(Operation *op, Value result) {
  if (auto split = dyn_cast<SplitOp>(op)) {
    if (llvm::none_of(split.getResults(),
                      [&](Value r) { return adjoints.count(r); }))
      return;
    SmallVector<Value> parts;
    for (Value result : split.getResults())
      parts.push_back(adjointOrZero(result));
    accumulate(split.getInput(),
               builder.create<ConcatOp>(loc, split.getInput().getType(),
                                        parts));
    return;
  }
  if (op->getNumResults() != 1)
    return;
  Value y = result ? result : op->getResult(0);
  Value dy = adjoints.lookup(y);
  if (!dy)
    return;
  if (auto math = dyn_cast<ElementwiseMath>(op)) {
    math.emitAdjoints(*this, y, dy);
    return;
  }
  Value a = op->getNumOperands() > 0 ? op->getOperand(0) : Value();
  TypeSwitch<Operation *>(op)
      .Case([&](LayerNormOp) {
        accumulate(a, create<LayerNormGradOp>(a, dy));
      })
      .Case([&](ConcatOp concat) {
        cellc::DimExpr offset;
        for (Value input : concat.getInputs()) {
          accumulate(input,
                     builder.create<SliceOp>(loc, input.getType(), dy, offset));
          offset = offset + vecLength(input.getType());
        }
      })
      .Default([](Operation *) {});
}

/// Expensive element-wise results worth saving rather than recomputing.
bool isSaveable(Operation *op) {
  auto math = dyn_cast<ElementwiseMath>(op);
  return math && math.isTranscendental();
}

/// Rebuilds `forward` so that it also yields `saved` (values of its region)
/// after its own results. Returns the new kernel.
FusedOp yieldSavedValues(FusedOp forward, ArrayRef<Value> saved) {
  OpBuilder builder(forward);
  SmallVector<Type> types(forward.getResultTypes());
  for (Value value : saved)
    types.push_back(value.getType());
  auto widened = builder.create<FusedOp>(forward.getLoc(), types,
                                         forward.getOperands());
  widened->setAttrs(forward->getAttrs());
  widened.getBody().takeBody(forward.getBody());
  Operation *yield = widened.getBody().front().getTerminator();
  SmallVector<Value> yielded(yield->getOperands());
  yielded.append(saved.begin(), saved.end());
  yield->setOperands(yielded);
  forward.replaceAllUsesWith(
      widened.getResults().take_front(forward.getNumResults()));
  forward.erase();
  return widened;
}

/// Builds the backward kernel of `forward` right after it.
void deriveKernel(FusedOp forward, bool saveActivations) {
  unsigned numResults = forward.getNumResults();
  unsigned numForward = forward.getNumOperands();
  SmallVector<Operation *> savedOps;
  if (saveActivations) {
    SmallVector<Value> saved;
    for (Operation &op : forward.getBody().front().without_terminator())
      if (isSaveable(&op)) {
        savedOps.push_back(&op);
        saved.push_back(op.getResult(0));
      }
    if (!saved.empty())
      forward = yieldSavedValues(forward, saved);
  }
  unsigned numSaved = savedOps.size();

  OpBuilder builder(forward->getContext());
  builder.setInsertionPointAfter(forward);
  Location loc = forward.getLoc();
  SmallVector<Value> operands(forward.getOperands());
  for (Value result : forward.getResults().drop_front(numResults))
    operands.push_back(result);
  for (Value result : forward.getResults().take_front(numResults))
    operands.push_back(builder.create<CotangentOp>(loc, result));
  SmallVector<Type> resultTypes(forward.getOperandTypes());
  auto backward = builder.create<FusedOp>(loc, resultTypes, operands);
  backward.setBackward(true);
  backward.setNumForwardOperands(numForward);
  if (numSaved)
    backward.setNumSaved(numSaved);
  backward.setFinal(forward.getFinal());

  SmallVector<Type> argTypes;
  SmallVector<Location> argLocs;
  for (Value operand : operands) {
    argTypes.push_back(operand.getType());
    argLocs.push_back(loc);
  }
  Block *block =
      builder.createBlock(&backward.getBody(), {}, argTypes, argLocs);

  // Recompute the forward values; saved ones are read instead: their clones
  // stay only as anchors for the derivative rules and are dead.
  IRMapping mapping;
  Block &forwardBlock = forward.getBody().front();
  mapping.map(forwardBlock.getArguments(),
              block->getArguments().take_front(numForward));
  SmallVector<Operation *> cloned;
  for (Operation &op : forwardBlock.without_terminator())
    cloned.push_back(builder.clone(op, mapping));
  DenseMap<Operation *, Value> savedValueOf;
  for (auto [index, op] : llvm::enumerate(savedOps)) {
    Operation *copy = mapping.lookup(op->getResult(0)).getDefiningOp();
    Value savedArg = block->getArgument(numForward + index);
    copy->getResult(0).replaceAllUsesWith(savedArg);
    savedValueOf[copy] = savedArg;
  }

  // Seed with the results' gradients and walk back.
  AdjointBuilder adjoints(builder, loc);
  unsigned cotangentBase = numForward + numSaved;
  for (unsigned index = 0; index < numResults; ++index) {
    Value yielded = forwardBlock.getTerminator()->getOperand(index);
    Value inBackward = mapping.lookupOrDefault(yielded);
    if (Operation *def = inBackward.getDefiningOp())
      if (Value saved = savedValueOf.lookup(def))
        inBackward = saved;
    adjoints.accumulate(inBackward, block->getArgument(cotangentBase + index));
  }
  for (Operation *op : llvm::reverse(cloned))
    adjoints.propagate(op, savedValueOf.lookup(op));

  SmallVector<Value> gradients;
  for (BlockArgument arg : block->getArguments().take_front(numForward))
    gradients.push_back(adjoints.adjointOrZero(arg));
  builder.create<YieldOp>(loc, gradients);

  // Forward values the gradients do not need (and saved values' anchors).
  SmallVector<Operation *> ops = llvm::to_vector(
      llvm::make_pointer_range(block->without_terminator()));
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty())
      op->erase();
}

struct DeriveBackwardPass
    : cell::impl::DeriveBackwardBase<DeriveBackwardPass> {
  using DeriveBackwardBase::DeriveBackwardBase;
  void runOnOperation() override {
    CellOp cell = getOperation();
    SmallVector<FusedOp> forwardKernels;
    cell.walk([&](FusedOp fused) {
      if (fused.getBackward())
        return;
      forwardKernels.push_back(fused);
    });
    bool alreadyDerived = false;
    cell.walk([&](CotangentOp) { alreadyDerived = true; });
    if (alreadyDerived)
      return;
    for (FusedOp forward : forwardKernels)
      deriveKernel(forward, saveActivations);
  }
};

} // namespace
