//===- Plan.cpp - Build a lowered cell's execution plan -------------------===//
//
// After fusion a cell is a sequence of products and kernels in two phases
// (prologue over all T*B rows, body per step). The plan names a buffer for
// every value that crosses between them and lists the operations in order;
// the runtime needs nothing else. When derive-backward has run, the plan
// also lists the backward pass: the backward kernels in reverse order, one
// data-gradient GEMM per product, and the weight and bias gradients as
// single reductions over all T*B rows.
//
// The writer builds the runtime's own cellrt::Plan and leaves the text to
// cellrt::printPlan, then reads that text back with cellrt::parsePlan: the
// format and its rules live once, in runtime/Plan.cpp, and a plan the
// runtime would refuse fails here, at compile time, as a cellc bug.
// Format: docs/plan-format.md.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "cellrt/DimExpr.h"
#include "cellrt/Plan.h"
#include "passes/Passes.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::cell;

namespace {

using cellrt::BufferDecl;
using cellrt::Phase;
using cellrt::Ref;
using Extent = BufferDecl::Extent;

/// Where a value lives: a column range of a buffer.
struct Slot {
  Extent extent = Extent::Step;
  std::string buffer;
  cellc::DimExpr offset;
  cellc::DimExpr bufferLength;
};

Ref::Kind refKindOf(Extent extent) {
  return extent == Extent::Sequence ? Ref::Kind::Seq : Ref::Kind::Step;
}

Ref makeRef(Ref::Kind kind, std::string name = {},
            cellc::DimExpr column = {}) {
  Ref ref;
  ref.kind = kind;
  ref.name = std::move(name);
  ref.column = std::move(column);
  return ref;
}

class PlanWriter {
public:
  explicit PlanWriter(CellOp cell) : cell(cell) {}
  FailureOr<std::string> write();

private:
  void writeHeader();
  void writeForward(Block &block, Phase phase, Extent extent);
  void writeBackward(Block &block, Phase phase, Extent extent);
  /// One buffer holding `values` side by side (a stacked product's results,
  /// or a single value); each value's reference carries its column offset.
  void allocate(ValueRange values, Extent extent);
  void declareBuffer(Extent extent, std::string name, cellc::DimExpr length);
  std::string weightFor(Operation *product, ValueRange matrices);
  /// A value the writer has not placed gets a name the runtime's check
  /// refuses, so the bug surfaces as a failed plan, not a wrong one.
  Ref refOf(Value value) const {
    auto known = refs.find(value);
    return known != refs.end() ? known->second
                               : makeRef(Ref::Kind::Step, "<unplaced>");
  }
  /// dL/d(value), declaring its gradient buffer on first use; `extent` is
  /// the phase's for vector-parameter gradients. None where the value has
  /// no gradient (a matrix param's comes from `wgrad`).
  std::optional<Ref> gradientRefOf(Value value, Extent extent);
  void addOperation(Phase phase, cellrt::Operation::Kind kind,
                    std::vector<Ref> operands, std::string weight = {},
                    int64_t kernel = -1);
  std::string nameOf(ArrayAttr names, unsigned index) {
    return names[index].cast<StringAttr>().getValue().str();
  }
  /// `scratch K LEN...` for the GPU launcher.
  void noteScratch(FusedOp fused, int64_t kernel, bool scan);

  CellOp cell;
  cellrt::Plan plan;
  /// `wgrad` and `pgrad`, which run after every other operation.
  std::vector<cellrt::Operation> reductions;
  DenseMap<Value, Ref> refs, gradientRefs;
  DenseMap<Value, Slot> slots;
  DenseMap<Operation *, std::string> weightOf;
  llvm::StringSet<> declaredGradients;
  unsigned numBuffers = 0;
  /// Per buffer, how many values' ranges it holds and (gradient buffers)
  /// how many of them a kernel stores (cell-store-sole-gradients).
  llvm::StringMap<unsigned> rangesOf, storedRangesOf;
};

/// The attribute setProductPrecision puts on a cell.
constexpr llvm::StringLiteral kPrecisionAttr = "cell.precision";

void PlanWriter::writeHeader() {
  plan.cellName = cell.getSymName().str();
  plan.dims = cellc::collectDims(cell);
  for (auto [index, arg] : llvm::enumerate(cell.getInputArgs())) {
    std::string name = nameOf(cell.getInputNames(), index);
    plan.inputs.push_back({name, vecLength(arg.getType())});
    refs[arg] = makeRef(Ref::Kind::Input, name);
    gradientRefs[arg] = makeRef(Ref::Kind::Dinput, name);
  }
  for (auto [index, arg] : llvm::enumerate(cell.getStateArgs())) {
    std::string name = nameOf(cell.getStateNames(), index);
    plan.states.push_back({name, vecLength(arg.getType())});
    refs[arg] = makeRef(Ref::Kind::State, name);
    gradientRefs[arg] = makeRef(Ref::Kind::Dstate, name);
  }
  for (auto [index, arg] : llvm::enumerate(cell.getParamArgs())) {
    std::string name = nameOf(cell.getParamNames(), index);
    cellrt::ParamDecl param{name, {}};
    if (auto mat = arg.getType().dyn_cast<MatType>())
      param.shape = {mat.getRows(), mat.getCols()};
    else
      param.shape = {vecLength(arg.getType())};
    plan.params.push_back(std::move(param));
    refs[arg] = makeRef(Ref::Kind::Param, name);
  }
  plan.outputWidth = cell.getOwnOutputLength();
  for (const auto &[name, length] : cell.getProbes())
    plan.probes.push_back({name.str(), length});
}

void PlanWriter::declareBuffer(Extent extent, std::string name,
                               cellc::DimExpr length) {
  BufferDecl buffer;
  buffer.extent = extent;
  buffer.name = std::move(name);
  buffer.length = std::move(length);
  plan.buffers.push_back(std::move(buffer));
}

void PlanWriter::allocate(ValueRange values, Extent extent) {
  std::string name = "v" + std::to_string(numBuffers++);
  cellc::DimExpr offset;
  for (Value value : values) {
    slots[value] = {extent, name, offset, {}};
    refs[value] = makeRef(refKindOf(extent), name, offset);
    offset = offset + vecLength(value.getType());
  }
  for (Value value : values)
    slots[value].bufferLength = offset;
  rangesOf[name] = values.size();
  declareBuffer(extent, name, offset);
}

std::optional<Ref> PlanWriter::gradientRefOf(Value value, Extent extent) {
  if (auto known = gradientRefs.find(value); known != gradientRefs.end())
    return known->second;
  std::optional<Ref> ref;
  if (auto slot = slots.find(value); slot != slots.end()) {
    const Slot &s = slot->second;
    std::string name = "d" + s.buffer;
    if (declaredGradients.insert(name).second) {
      declareBuffer(s.extent, name, s.bufferLength);
      rangesOf[name] = rangesOf.lookup(s.buffer);
    }
    ref = makeRef(refKindOf(s.extent), name, s.offset);
  } else if (refOf(value).kind == Ref::Kind::Param) {
    // A vector parameter: per-row contributions, summed at the end.
    std::string param = refOf(value).name;
    std::string name =
        "d" + param + (extent == Extent::Sequence ? "_seq" : "_step");
    declareBuffer(extent, name, vecLength(value.getType()));
    rangesOf[name] = 1;
    ref = makeRef(refKindOf(extent), name);
    cellrt::Operation pgrad;
    pgrad.phase = Phase::End;
    pgrad.kind = cellrt::Operation::Kind::Pgrad;
    pgrad.param = param;
    pgrad.operands = {*ref};
    reductions.push_back(std::move(pgrad));
  }
  if (ref)
    gradientRefs[value] = *ref;
  return ref;
}

std::string PlanWriter::weightFor(Operation *product, ValueRange matrices) {
  cellrt::WeightDecl weight;
  weight.name = "W" + std::to_string(plan.weights.size());
  for (Value matrix : matrices)
    weight.params.push_back(refOf(matrix).name);
  weightOf[product] = weight.name;
  plan.weights.push_back(weight);
  return weight.name;
}

void PlanWriter::addOperation(Phase phase, cellrt::Operation::Kind kind,
                              std::vector<Ref> operands, std::string weight,
                              int64_t kernel) {
  cellrt::Operation op;
  op.phase = phase;
  op.kind = kind;
  op.operands = std::move(operands);
  op.weight = std::move(weight);
  op.kernel = kernel;
  plan.operations.push_back(std::move(op));
}

void PlanWriter::noteScratch(FusedOp fused, int64_t kernel, bool scan) {
  SmallVector<cellc::ScratchSlot> slots =
      cellc::collectScratch(fused, scan, cell.getNumStates());
  if (slots.empty())
    return;
  std::vector<cellc::DimExpr> &lengths = plan.scratch[kernel];
  for (const cellc::ScratchSlot &slot : slots)
    lengths.push_back(vecLength(slot.type));
}

void PlanWriter::writeForward(Block &block, Phase phase, Extent extent) {
  using Kind = cellrt::Operation::Kind;
  for (Operation &op : block.without_terminator()) {
    if (isa<MatVecOp, StackedMatVecOp>(op)) {
      allocate(op.getResults(), extent);
      ValueRange matrices = op.getOperands().drop_back();
      std::string weight = weightFor(&op, matrices);
      addOperation(phase, Kind::Gemm,
                   {refOf(op.getResult(0)), refOf(op.getOperands().back())},
                   weight);
      continue;
    }
    auto fused = dyn_cast<FusedOp>(op);
    if (!fused || fused.getBackward())
      continue;
    if (fused.getFinal()) {
      for (auto [index, result] : llvm::enumerate(fused.getResults())) {
        // Results after the output are activations saved for backward.
        if (index > cell.getNumStates()) {
          allocate(result, extent);
          continue;
        }
        if (index == cell.getNumStates()) {
          refs[result] = makeRef(Ref::Kind::Out);
          gradientRefs[result] = makeRef(Ref::Kind::Dout);
          continue;
        }
        std::string state = nameOf(cell.getStateNames(), index);
        refs[result] = makeRef(Ref::Kind::Next, state);
        gradientRefs[result] = makeRef(Ref::Kind::Dnext, state);
      }
    } else {
      for (Value result : fused.getResults())
        allocate(result, extent);
    }
    std::vector<Ref> args;
    for (Value operand : fused.getOperands())
      args.push_back(refOf(operand));
    for (Value result : fused.getResults())
      args.push_back(refOf(result));
    int64_t kernel = *fused.getKernel();
    bool scan = fused.getScan();
    addOperation(scan ? Phase::Scan : phase, Kind::Kernel, args, {}, kernel);
    noteScratch(fused, kernel, scan);
  }
}

void PlanWriter::writeBackward(Block &block, Phase phase, Extent extent) {
  using Kind = cellrt::Operation::Kind;
  for (Operation &op : llvm::reverse(block.without_terminator())) {
    if (isa<MatVecOp, StackedMatVecOp>(op)) {
      // The product's data gradient now, its weight gradient once all T*B
      // rows of both factors are known.
      Value vector = op.getOperands().back();
      Ref resultGradient = gradientRefOf(op.getResult(0), extent)
                               .value_or(makeRef(Ref::Kind::Step, "<none>"));
      if (std::optional<Ref> vectorGradient = gradientRefOf(vector, extent))
        addOperation(phase, Kind::Gemm, {*vectorGradient, resultGradient},
                     weightOf[&op]);
      cellrt::Operation wgrad;
      wgrad.phase = Phase::End;
      wgrad.kind = Kind::Wgrad;
      wgrad.weight = weightOf[&op];
      wgrad.operands = {resultGradient, refOf(vector)};
      reductions.push_back(std::move(wgrad));
      continue;
    }
    auto fused = dyn_cast<FusedOp>(op);
    if (!fused || !fused.getBackward())
      continue;
    int64_t numForward = *fused.getNumForwardOperands();
    int64_t numSaved = fused.getNumSaved().value_or(0);
    int64_t kernel = *fused.getKernel();
    noteScratch(fused, kernel, /*scan=*/false);
    // A missing gradient reference is left out here and reported by the
    // plan's own check of the kernel's argument count.
    std::vector<Ref> args;
    for (Value operand : fused.getOperands().take_front(numForward + numSaved))
      args.push_back(refOf(operand));
    for (Value operand : fused.getOperands().drop_front(numForward + numSaved))
      if (std::optional<Ref> gradient = gradientRefOf(
              operand.getDefiningOp<CotangentOp>().getValue(), extent))
        args.push_back(*gradient);
    for (auto [index, operand] :
         llvm::enumerate(fused.getOperands().take_front(numForward))) {
      std::optional<Ref> gradient = gradientRefOf(operand, extent);
      if (!gradient)
        continue;
      args.push_back(*gradient);
      if (fused.isStoredResult(index))
        ++storedRangesOf[gradient->name];
    }
    addOperation(phase, Kind::Kernel, args, {}, kernel);
  }
}

FailureOr<std::string> PlanWriter::write() {
  FailureOr<cellrt::Precision> precision = cellc::productPrecision(cell);
  if (failed(precision))
    return failure();
  plan.precision = *precision;
  writeHeader();
  Block *prologue = cell.getPrologueBlock();
  if (prologue) {
    for (auto [bodyArg, prologueArg] : llvm::zip(
             llvm::concat<BlockArgument>(cell.getInputArgs(),
                                         cell.getParamArgs()),
             prologue->getArguments())) {
      refs[prologueArg] = refOf(bodyArg);
      if (gradientRefs.count(bodyArg))
        gradientRefs[prologueArg] = gradientRefs.find(bodyArg)->second;
    }
    writeForward(*prologue, Phase::Pre, Extent::Sequence);
    for (auto [hoisted, value] :
         llvm::zip(cell.getHoistedArgs(),
                   prologue->getTerminator()->getOperands())) {
      refs[hoisted] = refOf(value);
      slots[hoisted] = slots.lookup(value);
    }
  }
  writeForward(*cell.getBodyBlock(), Phase::Step, Extent::Step);

  bool hasBackward = false;
  cell.walk([&](CotangentOp) { hasBackward = true; });
  if (hasBackward) {
    writeBackward(*cell.getBodyBlock(), Phase::BStep, Extent::Step);
    if (prologue)
      writeBackward(*prologue, Phase::BPre, Extent::Sequence);
  }
  for (cellrt::Operation &reduction : reductions)
    plan.operations.push_back(std::move(reduction));
  // A gradient buffer whose every range a kernel stores needs no zeroing.
  for (BufferDecl &buffer : plan.buffers)
    buffer.written = storedRangesOf.lookup(buffer.name) > 0 &&
                     storedRangesOf.lookup(buffer.name) ==
                         rangesOf.lookup(buffer.name);

  std::string text = cellrt::printPlan(plan);
  cellrt::Expected<cellrt::Plan> checked = cellrt::parsePlan(text);
  if (!checked) {
    cell.emitError() << "the plan of cell '" << cell.getSymName()
                     << "' does not pass the runtime's checks: "
                     << checked.error() << "\n"
                     << text;
    return failure();
  }
  return text;
}

} // namespace

FailureOr<std::string> cellc::emitPlan(CellOp cell) {
  return PlanWriter(cell).write();
}

FailureOr<cellrt::Precision> cellc::productPrecision(CellOp cell) {
  Attribute attr = cell->getAttr(kPrecisionAttr);
  if (!attr)
    return cellrt::Precision::F32;
  auto name = attr.dyn_cast<StringAttr>();
  std::optional<cellrt::Precision> precision =
      name ? cellrt::parsePrecision(name.getValue().str()) : std::nullopt;
  if (!precision)
    return cell.emitError() << "'" << kPrecisionAttr
                            << "' must be \"f32\" or \"bf16\", got " << attr;
  return *precision;
}

void cellc::setProductPrecision(ModuleOp module, llvm::StringRef precision) {
  for (CellOp cell : module.getOps<CellOp>())
    cell->setAttr(kPrecisionAttr,
                  StringAttr::get(module.getContext(), precision));
}
