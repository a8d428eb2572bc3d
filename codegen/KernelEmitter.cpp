//===- KernelEmitter.cpp - One fused region as a kernel function ----------===//
//
// A fused region computes, for one row (one example, or one (step, example)
// pair in the prologue), a few vectors from a few vectors. Each output
// length gets one scf.for over elements that evaluates the whole expression
// tree per element, so intermediates live in registers and LLVM's loop
// vectoriser sees one simple loop. Only whole-vector operations (layer_norm,
// concat, split, slice) read or write row-local scratch.
//
// On the GPU a row is one thread block: its L lanes (blockDim.x, chosen by
// the launcher) split every element loop (lane l takes elements l, l + L,
// ...), so a block's loads of a row are coalesced and a step over B rows
// runs B blocks, not B threads. Scratch written by some lanes and read at
// other elements is fenced with a block barrier; row-wide sums (layer
// norm) are computed by every lane over the whole row.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelEmitter.h"
#include "codegen/Passes.h.inc"
#include "cellrt/DimExpr.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "passes/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include <set>

using namespace mlir;
using namespace mlir::cell;

namespace {

using cellc::isWholeVector;

class KernelEmitter {
public:
  /// `scan`: emit the whole-sequence form of a `scan` kernel. `gpu`: one
  /// thread block per row (threadIdx.x is the lane) instead of a loop over
  /// rows.
  KernelEmitter(FusedOp fused, func::FuncOp func,
                const std::vector<std::string> &dims, unsigned numStates,
                bool scan, bool gpu)
      : fused(fused), func(func), dims(dims), numStates(numStates),
        scan(scan), gpu(gpu), builder(func.getContext()),
        loc(fused.getLoc()) {}

  void emit();

private:
  Block &region() { return fused.getBody().front(); }
  unsigned numArgs() {
    return fused.getNumOperands() + fused.getNumResults();
  }
  bool isFinal() { return fused.getFinal(); }
  bool isBackward() { return fused.getBackward(); }
  /// Step kernels that must respect sequence lengths: the forward final
  /// kernel (it carries finished states) and every backward step kernel.
  bool isMasked() {
    return isa<CellOp>(fused->getParentOp()) &&
           fused->getParentRegion() ==
               &cast<CellOp>(fused->getParentOp()).getBody() &&
           (isFinal() || isBackward());
  }
  /// Stores element `element` of result `index`; backward kernels add to
  /// their gradients but the stored ones.
  void storeResult(unsigned index, Value value, Value element) {
    Value destination = rowPointers[fused.getNumOperands() + index];
    Value address = offsetPointer(destination, element);
    if (isBackward() && !fused.isStoredResult(index))
      value = builder.create<arith::AddFOp>(
          loc, builder.create<LLVM::LoadOp>(loc, address), value);
    builder.create<LLVM::StoreOp>(loc, value, address);
  }

  Value i64Constant(int64_t value) {
    return builder.create<arith::ConstantIntOp>(loc, value, 64);
  }
  Value f32Constant(double value) {
    return builder.create<arith::ConstantOp>(loc,
                                             builder.getF32FloatAttr(value));
  }
  Value toIndex(Value v) {
    return builder.create<arith::IndexCastOp>(loc, builder.getIndexType(), v);
  }
  Value toI64(Value v) {
    return builder.create<arith::IndexCastOp>(loc, builder.getI64Type(), v);
  }
  Value offsetPointer(Value base, Value offset) {
    return builder.create<LLVM::GEPOp>(loc, base.getType(), base,
                                       ValueRange{offset});
  }
  Value loadAt(Value base, Value offset) {
    return builder.create<LLVM::LoadOp>(loc, offsetPointer(base, offset));
  }

  void loadEntryValues();
  Value lengthOf(Type vecType);
  Value evaluate(const cellc::DimExpr &expr);
  void emitLayerNormGrad(LayerNormGradOp op);
  /// A summed term: its value at elements [i, i + width), a scalar when
  /// width is 1, else a vector of that many lanes.
  using RowTerm = function_ref<Value(Value i, unsigned width)>;
  /// `width` consecutive floats from base + offset (a scalar for 1).
  Value loadLanes(Value base, Value offset, unsigned width);
  /// `scalar` in each of `width` lanes (itself for 1).
  Value broadcast(Value scalar, unsigned width);
  /// Sum over the row of term(i) for i in [0, length).
  Value sumOver(Value length, RowTerm term);
  /// The sums of several terms in one pass over the row, each added in the
  /// same order as sumOver would.
  SmallVector<Value> sumsOver(Value length, ArrayRef<RowTerm> terms);
  /// term(begin) + ... + term(end - 1), added in order.
  Value serialSum(Value begin, Value end, RowTerm term);
  /// sumOver's partial sums on the CPU: four independent vectors of eight
  /// lanes (four ymm registers with AVX2 or AVX-512, eight xmm with SSE2)
  /// hide the add latency.
  static constexpr unsigned kSumWidth = 8, kSumVectors = 4;
  std::pair<Value, Value> rowStatistics(Value input, Value length);
  /// rowStatistics of a region value, once per row: a backward kernel
  /// recomputes the forward layer norm and then needs the same statistics
  /// for its gradient (SR-NMT's spent 3 of its 8 passes over a row on
  /// them again).
  std::pair<Value, Value> statisticsOf(Value value);
  void emitRow(Value row);
  void emitScanRow(Value row);
  void bindScratch(Value row);
  void copyRow(Value source, Value destination, Type type);
  void emitActiveRow();
  void emitInactiveRow();
  void forEachElement(Value length, function_ref<void(Value)> body);
  /// GPU: makes every lane's scratch writes visible to the row's other
  /// lanes (a block barrier); nothing on the CPU.
  void syncLanes();
  Value valueAt(Value value, Value element, DenseMap<Value, Value> &memo);
  Value emitElementwise(Operation *op, ArrayRef<Value> operands);
  void materialize(Value value);
  void emitLayerNorm(LayerNormOp op);

  FusedOp fused;
  func::FuncOp func;
  const std::vector<std::string> &dims;
  unsigned numStates;
  bool scan, gpu;
  /// GPU: this thread's lane within its row's block, and the lanes (i64).
  Value lane, lanes;
  OpBuilder builder;
  Location loc;

  std::map<std::string, Value> dimValues;
  SmallVector<Value> argBase, argStride, argStepStride;
  /// Per scratch slot (cellc::collectScratch order): the runtime's buffer
  /// and its row stride.
  SmallVector<Value> scratchBase, scratchStride;
  /// Scan kernels: the current and next value of each state, row-local.
  SmallVector<Value> currentState, nextState;
  /// Row pointers of the kernel arguments for the current row.
  SmallVector<Value> rowPointers;
  /// Where each region value's elements are, for the current row.
  DenseMap<Value, Value> storage;
  /// Row-local scratch for values whole-vector operations need.
  DenseMap<Value, Value> scratch;
  /// The current row's layer-norm statistics by region value.
  DenseMap<Value, std::pair<Value, Value>> statistics;
};

void KernelEmitter::loadEntryValues() {
  Block &entry = func.getBody().front();
  Value dimsPtr = entry.getArgument(4), ptrs = entry.getArgument(5),
        strides = entry.getArgument(6);
  for (auto [index, name] : llvm::enumerate(dims))
    dimValues[name] = loadAt(dimsPtr, i64Constant(index));
  for (unsigned i = 0; i < numArgs(); ++i) {
    argBase.push_back(loadAt(ptrs, i64Constant(i)));
    argStride.push_back(loadAt(strides, i64Constant(i)));
    // Scan kernels get a second stride per argument: its advance per step.
    if (scan)
      argStepStride.push_back(loadAt(strides, i64Constant(numArgs() + i)));
  }
  // The runtime passes one buffer per scratch slot after the arguments, so
  // a kernel never allocates (NVPTX has no dynamic stack, and a layer norm
  // over 10^6 elements outgrows a thread's stack) and running out of memory
  // is the runtime's error to report. emitRow offsets each by row x stride:
  // GPU rows run at once and get [rows, LEN] buffers; CPU rows of one
  // thread run in turn and share one buffer (stride 0).
  SmallVector<cellc::ScratchSlot> slots =
      cellc::collectScratch(fused, scan, numStates);
  unsigned strideBase = scan ? 2 * numArgs() : numArgs();
  for (unsigned index = 0; index < slots.size(); ++index) {
    scratchBase.push_back(loadAt(ptrs, i64Constant(numArgs() + index)));
    scratchStride.push_back(loadAt(strides, i64Constant(strideBase + index)));
  }
}

/// Points every scratch slot at this row's part of its buffer.
void KernelEmitter::bindScratch(Value row) {
  SmallVector<cellc::ScratchSlot> slots =
      cellc::collectScratch(fused, scan, numStates);
  currentState.clear();
  nextState.clear();
  for (auto [index, slot] : llvm::enumerate(slots)) {
    Value pointer = offsetPointer(
        scratchBase[index],
        builder.create<arith::MulIOp>(loc, row, scratchStride[index]));
    if (slot.kind == cellc::ScratchSlot::CurrentState)
      currentState.push_back(pointer);
    else if (slot.kind == cellc::ScratchSlot::NextState)
      nextState.push_back(pointer);
    else
      scratch[slot.value] = pointer;
  }
}

Value KernelEmitter::lengthOf(Type vecType) {
  return evaluate(vecLength(vecType));
}

Value KernelEmitter::evaluate(const cellc::DimExpr &expr) {
  Value total = i64Constant(expr.getConstant());
  for (const auto &[name, coefficient] : expr.getTerms()) {
    Value term = builder.create<arith::MulIOp>(loc, dimValues.at(name),
                                               i64Constant(coefficient));
    total = builder.create<arith::AddIOp>(loc, total, term);
  }
  return total;
}

void KernelEmitter::forEachElement(Value length,
                                   function_ref<void(Value)> body) {
  Value first = gpu ? toIndex(lane)
                    : builder.create<arith::ConstantIndexOp>(loc, 0).getResult();
  Value step = gpu ? toIndex(lanes)
                   : builder.create<arith::ConstantIndexOp>(loc, 1).getResult();
  auto loop = builder.create<scf::ForOp>(loc, first, toIndex(length), step);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(loop.getBody()->getTerminator());
  body(toI64(loop.getInductionVar()));
}

void KernelEmitter::syncLanes() {
  if (!gpu)
    return;
  builder.create<NVVM::Barrier0Op>(loc);
}

Value KernelEmitter::emitElementwise(Operation *op, ArrayRef<Value> args) {
  // Each op's scalar rule lives with the op (ir/ElementwiseRules.cpp).
  return cast<ElementwiseMath>(op).emitScalar(builder, loc, args);
}

/// The scalar value of `value` at `element` of the current row; element-wise
/// operations are evaluated on the spot and shared through `memo`.
Value KernelEmitter::valueAt(Value value, Value element,
                             DenseMap<Value, Value> &memo) {
  if (Value known = memo.lookup(value))
    return known;
  Value result;
  if (Value base = storage.lookup(value)) {
    result = loadAt(base, element);
  } else if (auto constant = value.getDefiningOp<ConstantOp>()) {
    result = f32Constant(constant.getValue().convertToDouble());
  } else {
    Operation *op = value.getDefiningOp();
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(valueAt(operand, element, memo));
    result = emitElementwise(op, operands);
  }
  memo[value] = result;
  return result;
}

/// Computes `value` for the whole row into its scratch, once.
void KernelEmitter::materialize(Value value) {
  if (storage.count(value))
    return;
  Value target = scratch.lookup(value);
  forEachElement(lengthOf(value.getType()), [&](Value element) {
    DenseMap<Value, Value> memo;
    builder.create<LLVM::StoreOp>(loc, valueAt(value, element, memo),
                                  offsetPointer(target, element));
  });
  syncLanes();
  storage[value] = target;
}

Value KernelEmitter::loadLanes(Value base, Value offset, unsigned width) {
  if (width == 1)
    return loadAt(base, offset);
  auto vectorPointer = LLVM::LLVMPointerType::get(
      VectorType::get({width}, builder.getF32Type()));
  Value address = builder.create<LLVM::BitcastOp>(
      loc, vectorPointer, offsetPointer(base, offset));
  return builder.create<LLVM::LoadOp>(loc, address, /*alignment=*/4);
}

Value KernelEmitter::broadcast(Value scalar, unsigned width) {
  if (width == 1)
    return scalar;
  Value lane = builder.create<LLVM::InsertElementOp>(
      loc,
      builder.create<LLVM::UndefOp>(
          loc, VectorType::get({width}, builder.getF32Type())),
      scalar, builder.create<arith::ConstantIntOp>(loc, 0, 32));
  return builder.create<LLVM::ShuffleVectorOp>(
      loc, lane, lane, SmallVector<int32_t>(width, 0));
}

Value KernelEmitter::serialSum(Value begin, Value end, RowTerm term) {
  Value one = builder.create<arith::ConstantIndexOp>(loc, 1);
  auto loop = builder.create<scf::ForOp>(
      loc, toIndex(begin), toIndex(end), one, ValueRange{f32Constant(0)},
      [&](OpBuilder &nested, Location, Value i, ValueRange sum) {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPointToEnd(nested.getInsertionBlock());
        Value next =
            builder.create<arith::AddFOp>(loc, sum[0], term(toI64(i), 1));
        builder.create<scf::YieldOp>(loc, next);
      });
  return loop.getResult(0);
}

/// Adds the halves of `values` pairwise until one is left.
static Value addPairwise(OpBuilder &builder, Location loc,
                         SmallVector<Value> values) {
  for (size_t half = values.size() / 2; half > 0; half /= 2)
    for (size_t k = 0; k < half; ++k)
      values[k] = builder.create<arith::AddFOp>(loc, values[k], values[k + half]);
  return values[0];
}

Value KernelEmitter::sumOver(Value length, RowTerm term) {
  return sumsOver(length, {term})[0];
}

/// On the CPU the row is summed in kSumVectors vectors of kSumWidth lanes
/// (element i into lane i % kSumWidth of vector (i / kSumWidth) %
/// kSumVectors), then the vectors and their lanes pairwise, then the tail
/// in order. One running sum is a chain of dependent adds (4 cycles an
/// element: a layer norm over 3*512 took 6 us a row, a fifth of SR-NMT's
/// training time). Several terms share the loop, each with its own
/// partials. The order of every add is fixed here, not by the
/// target's vector width, so each CPU level of a kernel gives the same
/// bits. GPU lanes each sum the whole row in order.
SmallVector<Value> KernelEmitter::sumsOver(Value length,
                                           ArrayRef<RowTerm> terms) {
  Value zero = i64Constant(0);
  SmallVector<Value> sums;
  if (gpu) {
    for (RowTerm term : terms)
      sums.push_back(serialSum(zero, length, term));
    return sums;
  }
  int64_t block = kSumWidth * kSumVectors;
  Value blocked = builder.create<arith::MulIOp>(
      loc, builder.create<arith::DivSIOp>(loc, length, i64Constant(block)),
      i64Constant(block));
  auto vectorType = VectorType::get({kSumWidth}, builder.getF32Type());
  Value zeros = builder.create<arith::ConstantOp>(
      loc, DenseElementsAttr::get(vectorType, 0.0f));
  // Term t's partial k is iteration argument t * kSumVectors + k.
  auto loop = builder.create<scf::ForOp>(
      loc, toIndex(zero), toIndex(blocked), toIndex(i64Constant(block)),
      SmallVector<Value>(kSumVectors * terms.size(), zeros),
      [&](OpBuilder &nested, Location, Value i, ValueRange partials) {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPointToEnd(nested.getInsertionBlock());
        SmallVector<Value> next;
        for (auto [t, term] : llvm::enumerate(terms))
          for (unsigned k = 0; k < kSumVectors; ++k) {
            Value first = builder.create<arith::AddIOp>(
                loc, toI64(i), i64Constant(k * kSumWidth));
            next.push_back(builder.create<arith::AddFOp>(
                loc, partials[t * kSumVectors + k], term(first, kSumWidth)));
          }
        builder.create<scf::YieldOp>(loc, next);
      });
  for (auto [t, term] : llvm::enumerate(terms)) {
    Value vectorSum = addPairwise(
        builder, loc,
        SmallVector<Value>(loop.getResults().slice(t * kSumVectors,
                                                   kSumVectors)));
    SmallVector<Value> lanes;
    for (unsigned lane = 0; lane < kSumWidth; ++lane)
      lanes.push_back(builder.create<LLVM::ExtractElementOp>(
          loc, vectorSum,
          builder.create<arith::ConstantIntOp>(loc, lane, 32)));
    sums.push_back(builder.create<arith::AddFOp>(
        loc, addPairwise(builder, loc, lanes),
        serialSum(blocked, length, term)));
  }
  return sums;
}

/// Mean and 1/sqrt(variance + eps) of a row. The mean is corrected by the
/// mean deviation from it (Chan, Golub and LeVeque's corrected two-pass
/// algorithm): a constant row then gets exactly its value as mean and
/// exactly zero deviations, where a plain sum / n is off by rounding that
/// 1/sqrt(eps) amplifies ~300-fold (a random-cell run found
/// layernorm(softplus(x - x)) off by 2e-4), and long rows lose less to
/// rounding.
std::pair<Value, Value> KernelEmitter::rowStatistics(Value input,
                                                     Value length) {
  Value count =
      builder.create<arith::SIToFPOp>(loc, builder.getF32Type(), length);
  Value rough = builder.create<arith::DivFOp>(
      loc,
      sumOver(length,
              [&](Value i, unsigned width) {
                return loadLanes(input, i, width);
              }),
      count);
  Value deviation = sumOver(length, [&](Value i, unsigned width) {
    return builder.create<arith::SubFOp>(loc, loadLanes(input, i, width),
                                         broadcast(rough, width));
  });
  Value mean = builder.create<arith::AddFOp>(
      loc, rough, builder.create<arith::DivFOp>(loc, deviation, count));
  Value variance = builder.create<arith::DivFOp>(
      loc,
      sumOver(length,
              [&](Value i, unsigned width) {
                Value d = builder.create<arith::SubFOp>(
                    loc, loadLanes(input, i, width), broadcast(mean, width));
                return builder.create<arith::MulFOp>(loc, d, d);
              }),
      count);
  Value scale = builder.create<arith::DivFOp>(
      loc, f32Constant(1),
      builder.create<math::SqrtOp>(
          loc, builder.create<arith::AddFOp>(loc, variance, f32Constant(1e-5))));
  return {mean, scale};
}

std::pair<Value, Value> KernelEmitter::statisticsOf(Value value) {
  auto known = statistics.find(value);
  if (known != statistics.end())
    return known->second;
  return statistics[value] =
             rowStatistics(storage.lookup(value), lengthOf(value.getType()));
}

void KernelEmitter::emitLayerNorm(LayerNormOp op) {
  Value input = storage.lookup(op.getOperand());
  Value length = lengthOf(op.getType());
  auto [mean, scale] = statisticsOf(op.getOperand());
  Value target = scratch.lookup(op.getResult());
  forEachElement(length, [&](Value i) {
    Value centered = builder.create<arith::SubFOp>(loc, loadAt(input, i), mean);
    builder.create<LLVM::StoreOp>(
        loc, builder.create<arith::MulFOp>(loc, centered, scale),
        offsetPointer(target, i));
  });
  syncLanes();
  storage[op.getResult()] = target;
}

/// dx = r * (dy - mean(dy) - n * mean(dy * n)) with n the normalised x.
void KernelEmitter::emitLayerNormGrad(LayerNormGradOp op) {
  Value input = storage.lookup(op.getInput());
  Value gradient = storage.lookup(op.getResultGradient());
  Value length = lengthOf(op.getType());
  auto [mean, scale] = statisticsOf(op.getInput());
  auto normalized = [&](Value i, unsigned width) {
    return builder.create<arith::MulFOp>(
        loc,
        builder.create<arith::SubFOp>(loc, loadLanes(input, i, width),
                                      broadcast(mean, width)),
        broadcast(scale, width));
  };
  Value count =
      builder.create<arith::SIToFPOp>(loc, builder.getF32Type(), length);
  // sum(dy) and sum(dy * n) in one pass over the row.
  auto gradientTerm = [&](Value i, unsigned width) -> Value {
    return loadLanes(gradient, i, width);
  };
  auto projectionTerm = [&](Value i, unsigned width) -> Value {
    return builder.create<arith::MulFOp>(loc, loadLanes(gradient, i, width),
                                         normalized(i, width));
  };
  SmallVector<Value> sums =
      sumsOver(length, {RowTerm(gradientTerm), RowTerm(projectionTerm)});
  Value meanGradient = builder.create<arith::DivFOp>(loc, sums[0], count);
  Value meanProjection = builder.create<arith::DivFOp>(loc, sums[1], count);
  Value target = scratch.lookup(op.getResult());
  forEachElement(length, [&](Value i) {
    Value centered =
        builder.create<arith::SubFOp>(loc, loadAt(gradient, i), meanGradient);
    Value projected = builder.create<arith::SubFOp>(
        loc, centered,
        builder.create<arith::MulFOp>(loc, normalized(i, 1), meanProjection));
    builder.create<LLVM::StoreOp>(
        loc, builder.create<arith::MulFOp>(loc, projected, scale),
        offsetPointer(target, i));
  });
  syncLanes();
  storage[op.getResult()] = target;
}

void KernelEmitter::emitActiveRow() {
  statistics.clear();
  // Whole-vector operations, in order, each on materialised operands.
  for (Operation &op : region().without_terminator()) {
    if (!isWholeVector(&op))
      continue;
    for (Value operand : op.getOperands())
      materialize(operand);
    if (auto norm = dyn_cast<LayerNormOp>(op)) {
      emitLayerNorm(norm);
    } else if (auto normGrad = dyn_cast<LayerNormGradOp>(op)) {
      emitLayerNormGrad(normGrad);
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      storage[slice.getResult()] = offsetPointer(
          storage.lookup(slice.getInput()), evaluate(slice.getOffset()));
    } else if (auto split = dyn_cast<SplitOp>(op)) {
      Value part = lengthOf(split.getResult(0).getType());
      Value base = storage.lookup(split.getInput());
      for (auto [k, result] : llvm::enumerate(split.getResults()))
        storage[result] = offsetPointer(
            base, builder.create<arith::MulIOp>(loc, part, i64Constant(k)));
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      Value target = scratch.lookup(concat.getResult());
      Value offset = i64Constant(0);
      for (Value input : concat.getInputs()) {
        Value destination = offsetPointer(target, offset);
        Value source = storage.lookup(input);
        forEachElement(lengthOf(input.getType()), [&](Value i) {
          builder.create<LLVM::StoreOp>(loc, loadAt(source, i),
                                        offsetPointer(destination, i));
        });
        offset = builder.create<arith::AddIOp>(loc, offset,
                                               lengthOf(input.getType()));
      }
      syncLanes();
      storage[concat.getResult()] = target;
    }
  }
  // One loop per distinct result length computes every result of it.
  auto yield = cast<YieldOp>(region().getTerminator());
  llvm::MapVector<Type, SmallVector<unsigned>> byLength;
  for (auto [index, value] : llvm::enumerate(yield.getValues()))
    byLength[value.getType()].push_back(index);
  for (auto &[type, indices] : byLength) {
    forEachElement(lengthOf(type), [&](Value element) {
      DenseMap<Value, Value> memo;
      for (unsigned index : indices) {
        Value result = valueAt(yield.getValues()[index], element, memo);
        storeResult(index, result, element);
      }
    });
  }
}

/// A finished sequence keeps its states and emits zeros (cell-language.md);
/// backwards, the carried state passes its gradient straight through and
/// nothing else receives any: added gradients are left alone, stored ones
/// get zeros.
void KernelEmitter::emitInactiveRow() {
  // Backward: the gradient of the next state follows the forward operands
  // and any saved activations.
  unsigned sourceBase = 0;
  if (isBackward()) {
    sourceBase =
        *fused.getNumForwardOperands() + fused.getNumSaved().value_or(0);
  }
  for (unsigned index = 0; index < fused.getNumResults(); ++index) {
    bool carried = isFinal() && index < numStates;
    if (isBackward() && !carried && !fused.isStoredResult(index))
      continue;
    Value source = carried ? rowPointers[sourceBase + index] : Value();
    forEachElement(lengthOf(fused.getResult(index).getType()),
                   [&](Value element) {
                     Value value = source ? loadAt(source, element)
                                          : f32Constant(0);
                     storeResult(index, value, element);
                   });
  }
}

void KernelEmitter::emitRow(Value row) {
  bindScratch(row);
  rowPointers.clear();
  storage.clear();
  for (unsigned i = 0; i < numArgs(); ++i)
    rowPointers.push_back(offsetPointer(
        argBase[i], builder.create<arith::MulIOp>(loc, row, argStride[i])));
  for (BlockArgument arg : region().getArguments())
    storage[arg] = rowPointers[arg.getArgNumber()];

  if (!isMasked()) {
    emitActiveRow();
    return;
  }
  Block &entry = func.getBody().front();
  Value length = builder.create<LLVM::SExtOp>(
      loc, builder.getI64Type(), loadAt(entry.getArgument(3), row));
  Value active = builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt,
                                               entry.getArgument(2), length);
  auto branch = builder.create<scf::IfOp>(loc, TypeRange{}, active,
                                          /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(branch.thenBlock()->getTerminator());
  emitActiveRow();
  builder.setInsertionPoint(branch.elseBlock()->getTerminator());
  emitInactiveRow();
}

void KernelEmitter::copyRow(Value source, Value destination, Type type) {
  forEachElement(lengthOf(type), [&](Value i) {
    builder.create<LLVM::StoreOp>(loc, loadAt(source, i),
                                  offsetPointer(destination, i));
  });
  // A scan step may read the state at other lanes' elements (a layer norm
  // of it), and must not overwrite scratch a slower lane still reads.
  syncLanes();
}

/// One example's whole sequence: the state lives in row-local scratch
/// (inference) or in its history (training), steps past the example's
/// length only get zero outputs and the carried state, and inference writes
/// the final state once at the end.
void KernelEmitter::emitScanRow(Value row) {
  bindScratch(row);
  Block &entry = func.getBody().front();
  Value steps = entry.getArgument(2);
  Value length = builder.create<LLVM::SExtOp>(
      loc, builder.getI64Type(), loadAt(entry.getArgument(3), row));
  SmallVector<Value> rowBase;
  for (unsigned i = 0; i < numArgs(); ++i)
    rowBase.push_back(offsetPointer(
        argBase[i], builder.create<arith::MulIOp>(loc, row, argStride[i])));
  unsigned numOperands = fused.getNumOperands();
  auto atStep = [&](unsigned i, Value step) {
    return offsetPointer(rowBase[i], builder.create<arith::MulIOp>(
                                         loc, step, argStepStride[i]));
  };
  auto stepLoop = [&](Value begin, Value end, function_ref<void(Value)> body) {
    Value one = builder.create<arith::ConstantIndexOp>(loc, 1);
    auto loop =
        builder.create<scf::ForOp>(loc, toIndex(begin), toIndex(end), one);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(loop.getBody()->getTerminator());
    body(toI64(loop.getInductionVar()));
  };
  auto ifThen = [&](Value condition, function_ref<void()> body) {
    auto branch = builder.create<scf::IfOp>(loc, TypeRange{}, condition,
                                            /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(branch.thenBlock()->getTerminator());
    body();
  };
  // Training binds each state to its history (block t before step t, one
  // block of rows per step: a non-zero advance), and the steps read and
  // write it in place, as the step kernels did. Inference binds a state to
  // one buffer (advance 0): the steps run in row-local scratch and the
  // final state is written once.
  SmallVector<Value> inPlace, inScratch;
  for (unsigned i = 0; i < numStates; ++i) {
    Value advance = argStepStride[numOperands + i];
    inPlace.push_back(builder.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::ne, advance, i64Constant(0)));
    inScratch.push_back(builder.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::eq, advance, i64Constant(0)));
  }
  auto stateType = [&](unsigned i) { return fused.getOperand(i).getType(); };
  for (unsigned i = 0; i < numStates; ++i)
    ifThen(inScratch[i],
           [&] { copyRow(rowBase[i], currentState[i], stateType(i)); });

  stepLoop(i64Constant(0), length, [&](Value step) {
    rowPointers.clear();
    storage.clear();
    for (unsigned i = 0; i < numArgs(); ++i)
      rowPointers.push_back(atStep(i, step));
    for (unsigned i = 0; i < numStates; ++i) {
      unsigned next = numOperands + i;
      rowPointers[i] = builder.create<LLVM::SelectOp>(
          loc, inPlace[i], rowPointers[i], currentState[i]);
      rowPointers[next] = builder.create<LLVM::SelectOp>(
          loc, inPlace[i], rowPointers[next], nextState[i]);
    }
    for (BlockArgument arg : region().getArguments())
      storage[arg] = rowPointers[arg.getArgNumber()];
    emitActiveRow();
    // The next step may read the state at other lanes' elements: the
    // copy to scratch ends with a barrier, the history needs its own.
    for (unsigned i = 0; i < numStates; ++i) {
      ifThen(inScratch[i],
             [&] { copyRow(nextState[i], currentState[i], stateType(i)); });
      if (gpu)
        ifThen(inPlace[i], [&] { syncLanes(); });
    }
  });
  // Past the example's end: the state carries, and the output and any
  // per-step values (probes, saved activations) are zeros, as a step
  // kernel's inactive rows.
  stepLoop(length, steps, [&](Value step) {
    for (unsigned index = numStates; index < fused.getNumResults(); ++index) {
      Value destination = atStep(numOperands + index, step);
      forEachElement(lengthOf(fused.getResult(index).getType()),
                     [&](Value i) {
                       builder.create<LLVM::StoreOp>(
                           loc, f32Constant(0), offsetPointer(destination, i));
                     });
    }
    for (unsigned i = 0; i < numStates; ++i)
      ifThen(inPlace[i], [&] {
        copyRow(atStep(i, step), atStep(numOperands + i, step), stateType(i));
      });
  });
  for (unsigned i = 0; i < numStates; ++i)
    ifThen(inScratch[i], [&] {
      copyRow(currentState[i], rowBase[numOperands + i], stateType(i));
    });
}

void KernelEmitter::emit() {
  Block &entry = func.getBody().front();
  builder.setInsertionPointToStart(&entry);
  loadEntryValues();
  if (gpu) {
    // The same row body, one block per row: row = row_begin + blockIdx.x,
    // lane = threadIdx.x. Every thread of a block has the same row, so the
    // row's branches are uniform over the block and its barriers are
    // reached by all of its threads.
    auto toI64FromI32 = [&](Value v) {
      return builder.create<arith::ExtUIOp>(loc, builder.getI64Type(), v);
    };
    Type i32 = builder.getI32Type();
    Value block = toI64FromI32(builder.create<NVVM::BlockIdXOp>(loc, i32));
    lanes = toI64FromI32(builder.create<NVVM::BlockDimXOp>(loc, i32));
    lane = toI64FromI32(builder.create<NVVM::ThreadIdXOp>(loc, i32));
    Value row = builder.create<arith::AddIOp>(loc, entry.getArgument(0), block);
    Value inRange = builder.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::slt, row, entry.getArgument(1));
    auto guard = builder.create<scf::IfOp>(loc, TypeRange{}, inRange,
                                           /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard insertion(builder);
      builder.setInsertionPoint(guard.thenBlock()->getTerminator());
      if (scan)
        emitScanRow(row);
      else
        emitRow(row);
    }
    builder.create<func::ReturnOp>(loc);
    return;
  }
  Value one = builder.create<arith::ConstantIndexOp>(loc, 1);
  builder.create<scf::ParallelOp>(
      loc, ValueRange{toIndex(entry.getArgument(0))},
      ValueRange{toIndex(entry.getArgument(1))}, ValueRange{one},
      [&](OpBuilder &nested, Location, ValueRange rows) {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPointToEnd(nested.getInsertionBlock());
        if (scan)
          emitScanRow(toI64(rows[0]));
        else
          emitRow(toI64(rows[0]));
      });
  builder.create<func::ReturnOp>(loc);
}

} // namespace

void cellc::emitKernel(FusedOp fused, func::FuncOp func,
                       const std::vector<std::string> &dims,
                       unsigned numStates, bool scan, bool gpu) {
  KernelEmitter(fused, func, dims, numStates, scan, gpu).emit();
}

