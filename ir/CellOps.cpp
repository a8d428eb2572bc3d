//===- CellOps.cpp - Operations of the cell dialect -----------------------===//

#include "ir/CellOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace mlir::cell;

#define GET_OP_CLASSES
#include "ir/CellOps.cpp.inc"

const cellc::DimExpr &mlir::cell::vecLength(Type vecType) {
  return vecType.cast<VecType>().getLength();
}

//===----------------------------------------------------------------------===//
// CellOp
//===----------------------------------------------------------------------===//

void CellOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   ArrayRef<StringRef> inputNames,
                   ArrayRef<StringRef> stateNames,
                   ArrayRef<StringRef> paramNames, StringRef outputName,
                   TypeRange argTypes, ArrayRef<Location> argLocs) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute("input_names", builder.getStrArrayAttr(inputNames));
  state.addAttribute("state_names", builder.getStrArrayAttr(stateNames));
  state.addAttribute("param_names", builder.getStrArrayAttr(paramNames));
  state.addAttribute("output_name", builder.getStringAttr(outputName));
  state.addRegion();
  Region *body = state.addRegion();
  SmallVector<Location> locs(argLocs.begin(), argLocs.end());
  locs.resize(argTypes.size(), state.location);
  // createBlock moves the insertion point; the caller's must stay put.
  OpBuilder::InsertionGuard guard(builder);
  builder.createBlock(body, {}, argTypes, locs);
}

YieldOp CellOp::getYield() {
  return cast<YieldOp>(getBodyBlock()->getTerminator());
}

SmallVector<std::pair<StringRef, cellc::DimExpr>> CellOp::getProbes() {
  SmallVector<std::pair<StringRef, cellc::DimExpr>> probes;
  std::optional<ArrayAttr> names = getProbeNames();
  std::optional<ArrayAttr> lengths = getProbeLengths();
  if (!names || !lengths)
    return probes;
  for (auto [name, length] : llvm::zip(*names, *lengths))
    probes.emplace_back(name.cast<StringAttr>().getValue(),
                        length.cast<DimExprAttr>().getValue());
  return probes;
}

cellc::DimExpr CellOp::getOwnOutputLength() {
  cellc::DimExpr length = vecLength(getYield().getValues().back().getType());
  for (const auto &probe : getProbes())
    length = length - probe.second;
  return length;
}

bool CellOp::hasStepProducts() {
  Block *body = getBodyBlock();
  return !body->getOps<MatVecOp>().empty() ||
         !body->getOps<StackedMatVecOp>().empty();
}

cellrt::InitScheme CellOp::getParamInit(StringRef name) {
  if (std::optional<DictionaryAttr> inits = getParamInits())
    if (auto init = inits->getAs<InitAttr>(name))
      return init.getScheme();
  return cellrt::InitScheme::none();
}

/// Every initialiser names a param and suits its rank.
static LogicalResult verifyParamInits(CellOp cell) {
  std::optional<DictionaryAttr> inits = cell.getParamInits();
  if (!inits)
    return success();
  for (NamedAttribute init : *inits) {
    auto names = cell.getParamNames().getAsValueRange<StringAttr>();
    auto found = llvm::find(names, init.getName().getValue());
    if (found == names.end())
      return cell.emitOpError("has an initialiser for '")
             << init.getName().getValue() << "', which is not a param";
    Type type =
        cell.getParamArgs()[std::distance(names.begin(), found)].getType();
    if (failed(verifyParamInit([&] { return cell.emitOpError(); },
                               init.getName().getValue(), init.getValue(),
                               type.isa<MatType>() ? 2 : 1)))
      return failure();
  }
  return success();
}

LogicalResult CellOp::verify() {
  Block *body = getBodyBlock();
  unsigned declared = getNumInputs() + getNumStates() + getNumParams();
  if (body->getNumArguments() < declared)
    return emitOpError("body has ") << body->getNumArguments()
                                    << " arguments but declares " << declared
                                    << " inputs, states and params";
  for (BlockArgument arg : getParamArgs())
    if (!arg.getType().isa<VecType, MatType>())
      return emitOpError("param argument #") << arg.getArgNumber()
                                             << " is not a vector or matrix";
  for (BlockArgument arg : body->getArguments())
    if (arg.getArgNumber() < getNumInputs() + getNumStates() ||
        arg.getArgNumber() >= declared)
      if (!arg.getType().isa<VecType>())
        return emitOpError("argument #") << arg.getArgNumber()
                                         << " must be a vector";
  auto yield = dyn_cast<YieldOp>(body->getTerminator());
  if (!yield)
    return emitOpError("body must end in cell.yield");
  if (yield.getValues().size() != getNumStates() + 1)
    return emitOpError("yield has ")
           << yield.getValues().size() << " values but needs "
           << getNumStates() + 1 << " (the next states, then the output)";
  if (getProbeNames().has_value() != getProbeLengths().has_value() ||
      (getProbeNames() && getProbeNames()->size() != getProbeLengths()->size()))
    return emitOpError("needs a length for every probe name");
  if (failed(verifyParamInits(*this)))
    return failure();
  for (auto [state, next] : llvm::zip(getStateArgs(), yield.getValues()))
    if (state.getType() != next.getType())
      return emitOpError("next value of a state has type ")
             << next.getType() << " but the state is " << state.getType();
  if (Block *prologue = getPrologueBlock()) {
    auto prologueYield = dyn_cast<YieldOp>(prologue->getTerminator());
    if (!prologueYield)
      return emitOpError("prologue must end in cell.yield");
    if (prologueYield.getValues().size() != getNumHoisted())
      return emitOpError("prologue yields ")
             << prologueYield.getValues().size() << " values but the body has "
             << getNumHoisted() << " hoisted arguments";
    if (prologue->getNumArguments() != getNumInputs() + getNumParams())
      return emitOpError("prologue must take the inputs and params");
  } else if (getNumHoisted() != 0) {
    return emitOpError("body has hoisted arguments but no prologue");
  }
  return success();
}

/// The final forward kernel ends a step: finished rows copy its leading
/// operands as their states, and the plan names its results as the next
/// states and the output, so the body must yield exactly those.
static LogicalResult verifyFinalKernel(CellOp cell, FusedOp fused) {
  Block::BlockArgListType states = cell.getStateArgs();
  if (fused.getNumOperands() < states.size() ||
      !llvm::equal(fused.getOperands().take_front(states.size()), states))
    return fused.emitOpError("is final but does not take the ")
           << states.size() << " states as its first operands";
  ValueRange yielded = cell.getYield().getValues();
  if (fused.getNumResults() < yielded.size() ||
      !llvm::equal(fused.getResults().take_front(yielded.size()), yielded))
    return fused.emitOpError("is final but the body does not yield its first ")
           << yielded.size() << " results";
  return success();
}

/// Marks that concern several kernels; checked after the kernels verified
/// their own. A step has one final forward kernel, and a scan kernel runs
/// every step on its own, which is only right when no product sits between
/// steps.
LogicalResult CellOp::verifyRegions() {
  if (Block *prologue = getPrologueBlock())
    for (FusedOp fused : prologue->getOps<FusedOp>())
      if (fused.getFinal())
        return fused.emitOpError("is final but in the prologue");
  bool productsBetweenSteps = hasStepProducts();
  FusedOp finalForward;
  for (FusedOp fused : getBodyBlock()->getOps<FusedOp>()) {
    if (fused.getScan() && productsBetweenSteps)
      return fused.emitOpError("is a scan kernel but the body has products");
    if (!fused.getFinal() || fused.getBackward())
      continue;
    if (finalForward)
      return fused.emitOpError("is a second final forward kernel");
    finalForward = fused;
    if (failed(verifyFinalKernel(*this, fused)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// FusedOp
//===----------------------------------------------------------------------===//

/// The marks derive-backward leaves: codegen and the plan read a backward
/// kernel's operands as forward operands, saved activations, then result
/// gradients, and its results as the forward operands' gradients.
static LogicalResult verifyBackwardMarks(FusedOp fused) {
  std::optional<uint64_t> numForward = fused.getNumForwardOperands();
  if (!fused.getBackward()) {
    if (numForward)
      return fused.emitOpError(
          "has num_forward_operands but is not a backward kernel");
    if (fused.getNumSaved())
      return fused.emitOpError("has num_saved but is not a backward kernel");
    return success();
  }
  if (!numForward)
    return fused.emitOpError("is a backward kernel without "
                             "num_forward_operands");
  unsigned numOperands = fused.getNumOperands();
  if (*numForward > numOperands)
    return fused.emitOpError("has num_forward_operands = ")
           << *numForward << " but only " << numOperands << " operands";
  uint64_t numSaved = fused.getNumSaved().value_or(0);
  if (*numForward + numSaved > numOperands)
    return fused.emitOpError("has num_forward_operands + num_saved = ")
           << *numForward + numSaved << " but only " << numOperands
           << " operands";
  ValueRange forwardOperands = fused.getOperands().take_front(*numForward);
  if (fused.getResultTypes() != forwardOperands.getTypes())
    return fused.emitOpError("results must be the gradients of the ")
           << *numForward << " forward operands, with their types";
  for (Value gradient : fused.getOperands().drop_front(*numForward + numSaved))
    if (!gradient.getDefiningOp<CotangentOp>())
      return fused.emitOpError("operands after the forward operands and "
                               "saved activations must be cell.cotangent");
  return success();
}

/// The mark cell-time-scan leaves: only the final forward kernel carries
/// the state through all steps.
static LogicalResult verifyScanMarks(FusedOp fused) {
  if (fused.getScan() && (!fused.getFinal() || fused.getBackward()))
    return fused.emitOpError("is a scan kernel but not the final forward "
                             "kernel");
  return success();
}

/// `stored` lists results of a backward kernel, each once, in order.
static LogicalResult verifyStoredMark(FusedOp fused) {
  std::optional<ArrayRef<int64_t>> stored = fused.getStored();
  if (!stored)
    return success();
  if (!fused.getBackward())
    return fused.emitOpError("has stored results but is not a backward "
                             "kernel");
  int64_t previous = -1;
  for (int64_t index : *stored) {
    if (index <= previous || index >= fused.getNumResults())
      return fused.emitOpError("stored results must be increasing indices "
                               "of its ")
             << fused.getNumResults() << " results";
    previous = index;
  }
  return success();
}

LogicalResult FusedOp::verify() {
  Block &block = getBody().front();
  if (block.getArgumentTypes() != getInputs().getTypes())
    return emitOpError("region arguments must match the operands");
  auto yield = cast<YieldOp>(block.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded values must match the results");
  if (failed(verifyBackwardMarks(*this)) || failed(verifyStoredMark(*this)))
    return failure();
  return verifyScanMarks(*this);
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

bool mlir::cell::isFiniteFloat32(double value) {
  // Halfway between the largest float32 and 2^128 rounds (to even) to inf;
  // everything below rounds to a finite float32. NaN compares false.
  return std::fabs(value) < 0x1.ffffffp+127;
}

std::string mlir::cell::formatNumber(double value) {
  if (std::isnan(value))
    return "NaN";
  if (std::isinf(value))
    return value > 0 ? "+inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

/// The front end folds numbers into finite float32 constants; IR read from
/// text (`cellc -x=mlir`) must hold to that too, or the kernels would
/// compute with inf or NaN that no source text shows.
LogicalResult ConstantOp::verify() {
  double value = getValue().convertToDouble();
  if (!isFiniteFloat32(value))
    return emitOpError("value must be a finite float32, got ")
           << formatNumber(value);
  return success();
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

static LogicalResult verifyProduct(Operation *op, MatType matrix,
                                   Type vector, Type result) {
  if (matrix.getCols() != vecLength(vector))
    return op->emitOpError("matrix columns ")
           << matrix.getCols().str() << " do not match the vector length "
           << vecLength(vector).str();
  if (matrix.getRows() != vecLength(result))
    return op->emitOpError("result length ")
           << vecLength(result).str() << " does not match the matrix rows "
           << matrix.getRows().str();
  return success();
}

LogicalResult MatVecOp::verify() {
  return verifyProduct(*this, getMatrix().getType().cast<MatType>(),
                       getVector().getType(), getResult().getType());
}

LogicalResult StackedMatVecOp::verify() {
  if (getMatrices().size() != getResults().size())
    return emitOpError("has ") << getMatrices().size() << " matrices but "
                               << getResults().size() << " results";
  if (getMatrices().size() < 2)
    return emitOpError("stacks fewer than two products");
  for (auto [matrix, result] : llvm::zip(getMatrices(), getResults()))
    if (failed(verifyProduct(*this, matrix.getType().cast<MatType>(),
                             getVector().getType(), result.getType())))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Whole-vector operations
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::verify() {
  cellc::DimExpr total;
  for (Value input : getInputs())
    total = total + vecLength(input.getType());
  if (total != vecLength(getResult().getType()))
    return emitOpError("result length ")
           << vecLength(getResult().getType()).str()
           << " is not the sum of the input lengths " << total.str();
  return success();
}

LogicalResult SplitOp::verify() {
  if (getResults().empty())
    return emitOpError("needs at least one result");
  Type part = getResults().front().getType();
  for (Value result : getResults())
    if (result.getType() != part)
      return emitOpError("parts have different types: ")
             << part << " vs " << result.getType();
  if (vecLength(part) * getResults().size() != vecLength(getInput().getType()))
    return emitOpError("input length ")
           << vecLength(getInput().getType()).str() << " is not "
           << getResults().size() << " times the part length "
           << vecLength(part).str();
  return success();
}
