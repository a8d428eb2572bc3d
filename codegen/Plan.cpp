//===- Plan.cpp - Write a lowered cell's execution plan -------------------===//
//
// After fusion a cell is a sequence of products and kernels in two phases
// (prologue over all T*B rows, body per step). The plan names a buffer for
// every value that crosses between them and lists the operations in order;
// the runtime needs nothing else. When derive-backward has run, the plan
// also lists the backward pass: the backward kernels in reverse order, one
// data-gradient GEMM per product, and the weight and bias gradients as
// single reductions over all T*B rows. Format: docs/plan-format.md.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "cellrt/DimExpr.h"
#include "passes/Passes.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::cell;

namespace {

/// Where a value lives: a column range of a named buffer.
struct Slot {
  std::string kind; // "seq" or "step"
  std::string buffer;
  cellc::DimExpr offset;
  cellc::DimExpr bufferLength;
};

std::string formatRef(StringRef kind, StringRef buffer,
                      const cellc::DimExpr &offset) {
  std::string ref = (kind + ":" + buffer).str();
  if (offset != cellc::DimExpr())
    ref += "+" + offset.str();
  return ref;
}

class PlanWriter {
public:
  explicit PlanWriter(CellOp cell) : cell(cell) {}
  std::string write();

private:
  void writeHeader();
  void writeForward(Block &block, StringRef phase, StringRef bufferKind);
  void writeBackward(Block &block, StringRef phase, StringRef bufferKind);
  /// One buffer holding `values` side by side (a stacked product's results,
  /// or a single value); each value's reference carries its column offset.
  void allocate(ValueRange values, StringRef bufferKind);
  std::string weightFor(Operation *product, ValueRange matrices);
  std::string refOf(Value value) { return refs.lookup(value); }
  /// The reference of dL/d(value), declaring its gradient buffer on first
  /// use; `bufferKind` is the phase's kind for vector-parameter gradients.
  std::string gradientRefOf(Value value, StringRef bufferKind);
  std::string nameOf(ArrayAttr names, unsigned index) {
    return names[index].cast<StringAttr>().getValue().str();
  }

  CellOp cell;
  DenseMap<Value, std::string> refs, gradientRefs;
  DenseMap<Value, Slot> slots;
  DenseMap<Operation *, std::string> weightOf;
  llvm::StringSet<> declaredGradients;
  /// `scratch K LEN...` for the GPU launcher.
  void noteScratch(FusedOp fused, int64_t kernel, bool scan);
  std::string header, buffers, weights, operations, reductions, scratchLines;
  unsigned numBuffers = 0, numWeights = 0;
};

void PlanWriter::writeHeader() {
  llvm::raw_string_ostream os(header);
  os << "cellc-plan 1\ncell " << cell.getSymName() << "\ndims";
  for (const std::string &dim : cellc::collectDims(cell))
    os << " " << dim;
  os << "\n";
  for (auto [index, arg] : llvm::enumerate(cell.getInputArgs())) {
    std::string name = nameOf(cell.getInputNames(), index);
    os << "input " << name << " " << vecLength(arg.getType()).str() << "\n";
    refs[arg] = "input:" + name;
    gradientRefs[arg] = "dinput:" + name;
  }
  for (auto [index, arg] : llvm::enumerate(cell.getStateArgs())) {
    std::string name = nameOf(cell.getStateNames(), index);
    os << "state " << name << " " << vecLength(arg.getType()).str() << "\n";
    refs[arg] = "state:" + name;
    gradientRefs[arg] = "dstate:" + name;
  }
  for (auto [index, arg] : llvm::enumerate(cell.getParamArgs())) {
    std::string name = nameOf(cell.getParamNames(), index);
    if (auto mat = arg.getType().dyn_cast<MatType>())
      os << "param " << name << " " << mat.getRows().str() << " "
         << mat.getCols().str() << "\n";
    else
      os << "param " << name << " " << vecLength(arg.getType()).str() << "\n";
    refs[arg] = "param:" + name;
  }
  os << "output " << cell.getOwnOutputLength().str() << "\n";
  for (const auto &[name, length] : cell.getProbes())
    os << "probe " << name << " " << length.str() << "\n";
}

void PlanWriter::allocate(ValueRange values, StringRef bufferKind) {
  std::string name = "v" + std::to_string(numBuffers++);
  cellc::DimExpr offset;
  for (Value value : values) {
    slots[value] = {bufferKind.str(), name, offset, {}};
    refs[value] = formatRef(bufferKind, name, offset);
    offset = offset + vecLength(value.getType());
  }
  for (Value value : values)
    slots[value].bufferLength = offset;
  buffers += ("buffer " + bufferKind + " " + name + " " + offset.str() + "\n")
                 .str();
}

std::string PlanWriter::gradientRefOf(Value value, StringRef bufferKind) {
  if (auto known = gradientRefs.find(value); known != gradientRefs.end())
    return known->second;
  std::string ref;
  if (auto slot = slots.find(value); slot != slots.end()) {
    const Slot &s = slot->second;
    std::string name = "d" + s.buffer;
    if (declaredGradients.insert(name).second)
      buffers += "buffer " + s.kind + " " + name + " " + s.bufferLength.str() +
                 "\n";
    ref = formatRef(s.kind, name, s.offset);
  } else if (refOf(value).rfind("param:", 0) == 0) {
    // A vector parameter: per-row contributions, summed at the end.
    std::string param = refOf(value).substr(strlen("param:"));
    std::string name = "d" + param + "_" + bufferKind.str();
    buffers += ("buffer " + bufferKind + " " + name + " " +
                vecLength(value.getType()).str() + "\n")
                   .str();
    ref = (bufferKind + ":" + name).str();
    reductions += "pgrad " + param + " " + ref + "\n";
  }
  gradientRefs[value] = ref;
  return ref;
}

std::string PlanWriter::weightFor(Operation *product, ValueRange matrices) {
  std::string name = "W" + std::to_string(numWeights++);
  weights += "weight " + name;
  for (Value matrix : matrices)
    weights += " " + refOf(matrix).substr(strlen("param:"));
  weights += "\n";
  weightOf[product] = name;
  return name;
}

void PlanWriter::noteScratch(FusedOp fused, int64_t kernel, bool scan) {
  SmallVector<cellc::ScratchSlot> slots =
      cellc::collectScratch(fused, scan, cell.getNumStates());
  if (slots.empty())
    return;
  scratchLines += "scratch " + std::to_string(kernel);
  for (const cellc::ScratchSlot &slot : slots)
    scratchLines += " " + vecLength(slot.type).str();
  scratchLines += "\n";
}

void PlanWriter::writeForward(Block &block, StringRef phase,
                              StringRef bufferKind) {
  llvm::raw_string_ostream os(operations);
  for (Operation &op : block.without_terminator()) {
    if (isa<MatVecOp, StackedMatVecOp>(op)) {
      allocate(op.getResults(), bufferKind);
      ValueRange matrices = op.getOperands().drop_back();
      os << phase << " gemm " << refOf(op.getResult(0)) << " "
         << weightFor(&op, matrices) << " "
         << refOf(op.getOperands().back()) << "\n";
      continue;
    }
    auto fused = dyn_cast<FusedOp>(op);
    if (!fused || fused.getBackward())
      continue;
    if (fused.getFinal()) {
      for (auto [index, result] : llvm::enumerate(fused.getResults())) {
        // Results after the output are activations saved for backward.
        if (index > cell.getNumStates()) {
          allocate(result, bufferKind);
          continue;
        }
        bool isState = index < cell.getNumStates();
        std::string state =
            isState ? nameOf(cell.getStateNames(), index) : std::string();
        refs[result] = isState ? "next:" + state : std::string("out");
        gradientRefs[result] = isState ? "dnext:" + state : std::string("dout");
      }
    } else {
      for (Value result : fused.getResults())
        allocate(result, bufferKind);
    }
    std::string args;
    for (Value operand : fused.getOperands())
      args += " " + refOf(operand);
    for (Value result : fused.getResults())
      args += " " + refOf(result);
    int64_t kernel = *fused.getKernel();
    os << phase << " kernel " << kernel << args << "\n";
    noteScratch(fused, kernel, /*scan=*/false);
    if (std::optional<uint64_t> scan = fused.getScanKernel()) {
      os << "scan kernel " << *scan << args << "\n";
      noteScratch(fused, *scan, /*scan=*/true);
    }
  }
}

void PlanWriter::writeBackward(Block &block, StringRef phase,
                               StringRef bufferKind) {
  llvm::raw_string_ostream os(operations);
  for (Operation &op : llvm::reverse(block.without_terminator())) {
    if (isa<MatVecOp, StackedMatVecOp>(op)) {
      // The product's data gradient now, its weight gradient once all T*B
      // rows of both factors are known.
      Value vector = op.getOperands().back();
      std::string resultGradient = gradientRefOf(op.getResult(0), bufferKind);
      std::string vectorGradient = gradientRefOf(vector, bufferKind);
      if (!vectorGradient.empty())
        os << phase << " gemm " << vectorGradient << " " << weightOf[&op]
           << " " << resultGradient << "\n";
      reductions += "wgrad " + weightOf[&op] + " " + resultGradient + " " +
                    refOf(vector) + "\n";
      continue;
    }
    auto fused = dyn_cast<FusedOp>(op);
    if (!fused || !fused.getBackward())
      continue;
    int64_t numForward = *fused.getNumForwardOperands();
    int64_t numSaved = fused.getNumSaved().value_or(0);
    int64_t kernel = *fused.getKernel();
    noteScratch(fused, kernel, /*scan=*/false);
    os << phase << " kernel " << kernel;
    for (Value operand : fused.getOperands().take_front(numForward + numSaved))
      os << " " << refOf(operand);
    for (Value operand : fused.getOperands().drop_front(numForward + numSaved))
      os << " "
         << gradientRefOf(operand.getDefiningOp<CotangentOp>().getValue(),
                          bufferKind);
    for (Value operand : fused.getOperands().take_front(numForward))
      os << " " << gradientRefOf(operand, bufferKind);
    os << "\n";
  }
}

std::string PlanWriter::write() {
  writeHeader();
  Block *prologue = cell.getPrologueBlock();
  if (prologue) {
    for (auto [bodyArg, prologueArg] : llvm::zip(
             llvm::concat<BlockArgument>(cell.getInputArgs(),
                                         cell.getParamArgs()),
             prologue->getArguments())) {
      refs[prologueArg] = refOf(bodyArg);
      if (gradientRefs.count(bodyArg))
        gradientRefs[prologueArg] = gradientRefs[bodyArg];
    }
    writeForward(*prologue, "pre", "seq");
    for (auto [hoisted, value] :
         llvm::zip(cell.getHoistedArgs(),
                   prologue->getTerminator()->getOperands())) {
      refs[hoisted] = refOf(value);
      slots[hoisted] = slots.lookup(value);
    }
  }
  writeForward(*cell.getBodyBlock(), "step", "step");

  bool hasBackward = false;
  cell.walk([&](CotangentOp) { hasBackward = true; });
  if (hasBackward) {
    writeBackward(*cell.getBodyBlock(), "bstep", "step");
    if (prologue)
      writeBackward(*prologue, "bpre", "seq");
  }
  return header + buffers + weights + operations + reductions + scratchLines;
}

} // namespace

std::string cellc::emitPlan(CellOp cell) { return PlanWriter(cell).write(); }
