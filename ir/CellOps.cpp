//===- CellOps.cpp - Operations of the cell dialect -----------------------===//

#include "ir/CellOps.h"
#include "ir/DimExpr.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::cell;

#define GET_OP_CLASSES
#include "ir/CellOps.cpp.inc"

std::string mlir::cell::getLengthText(Type vecType) {
  return vecType.cast<VecType>().getLength().str();
}

static cellc::DimExpr lengthOf(Type vecType) {
  // Types verify their dimension text, so parsing cannot fail here.
  return *cellc::DimExpr::parse(getLengthText(vecType));
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

//===----------------------------------------------------------------------===//
// FusedOp
//===----------------------------------------------------------------------===//

LogicalResult FusedOp::verify() {
  Block &block = getBody().front();
  if (block.getArgumentTypes() != getInputs().getTypes())
    return emitOpError("region arguments must match the operands");
  auto yield = cast<YieldOp>(block.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded values must match the results");
  return success();
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

static LogicalResult verifyProduct(Operation *op, MatType matrix,
                                   Type vector, Type result) {
  if (matrix.getCols() != getLengthText(vector))
    return op->emitOpError("matrix columns ")
           << matrix.getCols() << " do not match the vector length "
           << getLengthText(vector);
  if (matrix.getRows() != getLengthText(result))
    return op->emitOpError("result length ")
           << getLengthText(result) << " does not match the matrix rows "
           << matrix.getRows();
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
    total = total + lengthOf(input.getType());
  if (total != lengthOf(getResult().getType()))
    return emitOpError("result length ")
           << getLengthText(getResult().getType())
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
  if (lengthOf(part) * getResults().size() != lengthOf(getInput().getType()))
    return emitOpError("input length ")
           << getLengthText(getInput().getType()) << " is not "
           << getResults().size() << " times the part length "
           << getLengthText(part);
  return success();
}
