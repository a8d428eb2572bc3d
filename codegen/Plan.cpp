//===- Plan.cpp - Write a lowered cell's execution plan -------------------===//
//
// After fusion a cell is a sequence of products and kernels in two phases
// (prologue over all T*B rows, body per step). The plan names a buffer for
// every value that crosses between them and lists the operations in order;
// the runtime needs nothing else. Format: docs/plan-format.md.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "ir/DimExpr.h"
#include "passes/Passes.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::cell;

namespace {

cellc::DimExpr lengthOf(Type type) {
  return *cellc::DimExpr::parse(getLengthText(type));
}

class PlanWriter {
public:
  explicit PlanWriter(CellOp cell) : cell(cell) {}
  std::string write();

private:
  void writeHeader();
  void writePhase(Block &block, StringRef phase, StringRef bufferKind);
  /// One buffer holding `values` side by side (a stacked product's results,
  /// or a single value); each value's reference carries its column offset.
  void allocate(ValueRange values, StringRef bufferKind);
  std::string weightFor(ValueRange matrices);
  std::string refOf(Value value) { return refs.lookup(value); }

  CellOp cell;
  DenseMap<Value, std::string> refs;
  std::string header, buffers, weights, operations;
  unsigned numBuffers = 0, numWeights = 0;
};

void PlanWriter::writeHeader() {
  llvm::raw_string_ostream os(header);
  os << "cellc-plan 1\ncell " << cell.getSymName() << "\ndims";
  for (const std::string &dim : cellc::collectDims(cell))
    os << " " << dim;
  os << "\n";
  auto names = [](ArrayAttr attr) {
    return llvm::map_range(attr, [](Attribute a) {
      return a.cast<StringAttr>().getValue();
    });
  };
  for (auto [name, arg] : llvm::zip(names(cell.getInputNames()),
                                    cell.getInputArgs())) {
    os << "input " << name << " " << getLengthText(arg.getType()) << "\n";
    refs[arg] = ("input:" + name).str();
  }
  for (auto [name, arg] : llvm::zip(names(cell.getStateNames()),
                                    cell.getStateArgs())) {
    os << "state " << name << " " << getLengthText(arg.getType()) << "\n";
    refs[arg] = ("state:" + name).str();
  }
  for (auto [name, arg] : llvm::zip(names(cell.getParamNames()),
                                    cell.getParamArgs())) {
    if (auto mat = arg.getType().dyn_cast<MatType>())
      os << "param " << name << " " << mat.getRows() << " " << mat.getCols()
         << "\n";
    else
      os << "param " << name << " " << getLengthText(arg.getType()) << "\n";
    refs[arg] = ("param:" + name).str();
  }
  os << "output " << getLengthText(cell.getYield().getValues().back().getType())
     << "\n";
}

void PlanWriter::allocate(ValueRange values, StringRef bufferKind) {
  std::string name = "v" + std::to_string(numBuffers++);
  cellc::DimExpr offset;
  for (Value value : values) {
    std::string ref = (bufferKind + ":" + name).str();
    if (offset != cellc::DimExpr())
      ref += "+" + offset.str();
    refs[value] = ref;
    offset = offset + lengthOf(value.getType());
  }
  buffers += ("buffer " + bufferKind + " " + name + " " + offset.str() + "\n")
                 .str();
}

std::string PlanWriter::weightFor(ValueRange matrices) {
  std::string name = "W" + std::to_string(numWeights++);
  weights += "weight " + name;
  for (Value matrix : matrices)
    weights += " " + refOf(matrix).substr(strlen("param:"));
  weights += "\n";
  return name;
}

void PlanWriter::writePhase(Block &block, StringRef phase,
                            StringRef bufferKind) {
  llvm::raw_string_ostream os(operations);
  for (Operation &op : block.without_terminator()) {
    if (auto product = dyn_cast<MatVecOp>(op)) {
      allocate(product->getResults(), bufferKind);
      os << phase << " gemm " << refOf(product.getResult()) << " "
         << weightFor(product.getMatrix()) << " "
         << refOf(product.getVector()) << "\n";
    } else if (auto stacked = dyn_cast<StackedMatVecOp>(op)) {
      allocate(stacked.getResults(), bufferKind);
      os << phase << " gemm " << refOf(stacked.getResult(0)) << " "
         << weightFor(stacked.getMatrices()) << " "
         << refOf(stacked.getVector()) << "\n";
    } else if (auto fused = dyn_cast<FusedOp>(op)) {
      if (fused->hasAttr(kFinalKernelAttr)) {
        for (auto [index, result] : llvm::enumerate(fused.getResults()))
          refs[result] =
              index < cell.getNumStates()
                  ? "next:" + cell.getStateNames()[index]
                                  .cast<StringAttr>()
                                  .getValue()
                                  .str()
                  : std::string("out");
      } else {
        for (Value result : fused.getResults())
          allocate(result, bufferKind);
      }
      os << phase << " kernel "
         << fused->getAttrOfType<IntegerAttr>("kernel").getInt();
      for (Value operand : fused.getOperands())
        os << " " << refOf(operand);
      for (Value result : fused.getResults())
        os << " " << refOf(result);
      os << "\n";
    }
  }
}

std::string PlanWriter::write() {
  writeHeader();
  if (Block *prologue = cell.getPrologueBlock()) {
    for (auto [bodyArg, prologueArg] : llvm::zip(
             llvm::concat<BlockArgument>(cell.getInputArgs(),
                                         cell.getParamArgs()),
             prologue->getArguments()))
      refs[prologueArg] = refOf(bodyArg);
    writePhase(*prologue, "pre", "seq");
    for (auto [hoisted, value] :
         llvm::zip(cell.getHoistedArgs(),
                   prologue->getTerminator()->getOperands()))
      refs[hoisted] = refOf(value);
  }
  writePhase(*cell.getBodyBlock(), "step", "step");
  return header + buffers + weights + operations;
}

} // namespace

std::string cellc::emitPlan(CellOp cell) { return PlanWriter(cell).write(); }
