//===- BuildSchedule.cpp - A lowered cell's schedule ----------------------===//
//
// After fusion a cell is a sequence of products and kernels in two phases
// (prologue over all T*B rows, body per step). Its schedule (a
// `sched.program`, schedule/ScheduleOps.td) declares a buffer for every
// value that crosses between them and lists the operations in order; the
// runtime needs nothing else. When derive-backward has run, the schedule
// also lists the backward pass: the backward kernels in reverse order, one
// data-gradient GEMM per product, and the weight and bias gradients as
// single reductions over all T*B rows.
//
// The program converts to the runtime's plan (docs/plan-format.md), checked
// by the runtime's own rules (cellrt::validatePlan, the one place they
// live): a schedule the runtime would refuse fails here, at compile time,
// as a cellc bug.
//
//===----------------------------------------------------------------------===//

#include "schedule/BuildSchedule.h"

#include "cellrt/DimExpr.h"
#include "cellrt/Plan.h"
#include "ir/KernelAnalysis.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::cell {
#define GEN_PASS_DEF_BUILDSCHEDULE
#include "schedule/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {

using sched::Extent;
using sched::Phase;
using sched::RefAttr;
using sched::RefKind;

/// Where a value lives: a column range of a buffer.
struct Slot {
  Extent extent = Extent::Step;
  std::string buffer;
  cellc::DimExpr offset;
  cellc::DimExpr bufferLength;
};

/// The name a reference points into; empty for `out` and `dout`.
StringRef targetName(RefAttr ref) {
  return ref.getTarget() ? ref.getTarget().getValue() : StringRef();
}

RefKind refKindOf(Extent extent) {
  return extent == Extent::Sequence ? RefKind::Seq : RefKind::Step;
}

class ScheduleBuilder {
public:
  ScheduleBuilder(CellOp cell, OpBuilder &builder)
      : cell(cell), builder(builder), loc(cell.getLoc()) {}
  FailureOr<sched::ProgramOp> build();

private:
  RefAttr makeRef(RefKind kind, StringRef name = {},
                  cellc::DimExpr column = {}) const {
    return RefAttr::get(
        builder.getContext(), kind,
        name.empty() ? FlatSymbolRefAttr()
                     : FlatSymbolRefAttr::get(builder.getContext(), name),
        column);
  }
  void declareArrays();
  void buildForward(Block &block, Phase phase, Extent extent);
  void buildBackward(Block &block, Phase phase, Extent extent);
  void buildBackwardProduct(Operation &product, Phase phase, Extent extent);
  void buildBackwardKernel(FusedOp fused, Phase phase, Extent extent);
  void shareDuplicateGradients(FusedOp fused, Extent extent);
  void shareBufferGradients(FusedOp fused, Extent extent,
                            ArrayRef<std::optional<unsigned>> sameAs);
  /// One buffer holding `values` side by side (a stacked product's results,
  /// or a single value); each value's reference carries its column offset.
  void allocate(ValueRange values, Extent extent);
  void declareBuffer(Extent extent, StringRef name, cellc::DimExpr length);
  std::string weightFor(Operation *product, ValueRange matrices);
  /// A value the builder has not placed gets a name the runtime's check
  /// refuses, so the bug surfaces as a failed schedule, not a wrong one.
  RefAttr refOf(Value value) const {
    auto known = refs.find(value);
    return known != refs.end() ? known->second
                               : makeRef(RefKind::Step, "<unplaced>");
  }
  /// dL/d(value), declaring its gradient buffer on first use; `extent` is
  /// the phase's for vector-parameter gradients. None where the value has
  /// no gradient (a matrix param's comes from `wgrad`).
  std::optional<RefAttr> gradientRefOf(Value value, Extent extent);
  ArrayAttr refArray(ArrayRef<RefAttr> refs) const {
    return builder.getArrayAttr(
        SmallVector<Attribute>(refs.begin(), refs.end()));
  }
  std::string nameOf(ArrayAttr names, unsigned index) {
    return names[index].cast<StringAttr>().getValue().str();
  }
  /// `sched.scratch` for the GPU launcher.
  void noteScratch(FusedOp fused, int64_t kernel, bool scan);
  /// Declarations first, then the operations in order, then the
  /// reductions (`wgrad`, `pgrad`), which run after everything else.
  void arrange();

  CellOp cell;
  OpBuilder &builder;
  Location loc;
  sched::ProgramOp program;
  DenseMap<Value, RefAttr> refs, gradientRefs;
  DenseMap<Value, Slot> slots;
  DenseMap<Operation *, std::string> weightOf;
  llvm::StringSet<> declaredGradients;
  llvm::StringMap<sched::BufferOp> buffers;
  unsigned numBuffers = 0, numWeights = 0;
  /// Per buffer, how many values' ranges it holds and (gradient buffers)
  /// which of them a kernel stores (cell-store-sole-gradients).
  llvm::StringMap<unsigned> rangesOf;
  llvm::StringMap<DenseSet<Attribute>> storedRangesOf;
};

/// The attribute setProductPrecision puts on a cell.
constexpr llvm::StringLiteral kPrecisionAttr = "cell.precision";

cell::DimExprAttr dimAttr(MLIRContext *context, const cellc::DimExpr &expr) {
  return cell::DimExprAttr::get(context, expr);
}

void ScheduleBuilder::declareArrays() {
  MLIRContext *context = builder.getContext();
  for (auto [index, arg] : llvm::enumerate(cell.getInputArgs())) {
    std::string name = nameOf(cell.getInputNames(), index);
    builder.create<sched::InputOp>(loc, builder.getStringAttr(name),
                                   dimAttr(context, vecLength(arg.getType())),
                                   /*written_gradient=*/UnitAttr());
    refs[arg] = makeRef(RefKind::Input, name);
    gradientRefs[arg] = makeRef(RefKind::Dinput, name);
  }
  for (auto [index, arg] : llvm::enumerate(cell.getStateArgs())) {
    std::string name = nameOf(cell.getStateNames(), index);
    builder.create<sched::StateOp>(loc, builder.getStringAttr(name),
                                   dimAttr(context, vecLength(arg.getType())));
    refs[arg] = makeRef(RefKind::State, name);
    gradientRefs[arg] = makeRef(RefKind::Dstate, name);
  }
  for (auto [index, arg] : llvm::enumerate(cell.getParamArgs())) {
    std::string name = nameOf(cell.getParamNames(), index);
    SmallVector<Attribute> shape;
    if (auto mat = arg.getType().dyn_cast<MatType>())
      shape = {dimAttr(context, mat.getRows()),
               dimAttr(context, mat.getCols())};
    else
      shape = {dimAttr(context, vecLength(arg.getType()))};
    cellrt::InitScheme init = cell.getParamInit(name);
    builder.create<sched::ParamOp>(
        loc, builder.getStringAttr(name), builder.getArrayAttr(shape),
        init.isNone() ? InitAttr() : InitAttr::get(context, init));
    refs[arg] = makeRef(RefKind::Param, name);
  }
  for (const auto &[name, length] : cell.getProbes())
    builder.create<sched::ProbeOp>(loc, builder.getStringAttr(name),
                                   dimAttr(context, length));
}

void ScheduleBuilder::declareBuffer(Extent extent, StringRef name,
                                    cellc::DimExpr length) {
  buffers[name] = builder.create<sched::BufferOp>(
      loc, builder.getStringAttr(name),
      sched::ExtentAttr::get(builder.getContext(), extent),
      dimAttr(builder.getContext(), length), /*written=*/UnitAttr());
}

void ScheduleBuilder::allocate(ValueRange values, Extent extent) {
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

std::optional<RefAttr> ScheduleBuilder::gradientRefOf(Value value,
                                                      Extent extent) {
  if (auto known = gradientRefs.find(value); known != gradientRefs.end())
    return known->second;
  std::optional<RefAttr> ref;
  if (auto slot = slots.find(value); slot != slots.end()) {
    const Slot &s = slot->second;
    std::string name = "d" + s.buffer;
    if (declaredGradients.insert(name).second) {
      declareBuffer(s.extent, name, s.bufferLength);
      rangesOf[name] = rangesOf.lookup(s.buffer);
    }
    ref = makeRef(refKindOf(s.extent), name, s.offset);
  } else if (refOf(value).getKind() == RefKind::Param) {
    // A vector parameter: per-row contributions, summed at the end.
    FlatSymbolRefAttr param = refOf(value).getTarget();
    std::string name = "d" + param.getValue().str() +
                       (extent == Extent::Sequence ? "_seq" : "_step");
    declareBuffer(extent, name, vecLength(value.getType()));
    rangesOf[name] = 1;
    ref = makeRef(refKindOf(extent), name);
    builder.create<sched::PgradOp>(loc, param, *ref);
  }
  if (ref)
    gradientRefs[value] = *ref;
  return ref;
}

std::string ScheduleBuilder::weightFor(Operation *product,
                                       ValueRange matrices) {
  std::string name = "W" + std::to_string(numWeights++);
  SmallVector<Attribute> params;
  for (Value matrix : matrices)
    params.push_back(FlatSymbolRefAttr::get(builder.getContext(),
                                            targetName(refOf(matrix))));
  builder.create<sched::WeightOp>(loc, builder.getStringAttr(name),
                                  builder.getArrayAttr(params));
  return weightOf[product] = name;
}

void ScheduleBuilder::noteScratch(FusedOp fused, int64_t kernel, bool scan) {
  SmallVector<cellc::ScratchSlot> slots =
      cellc::collectScratch(fused, scan, cell.getNumStates());
  if (slots.empty())
    return;
  SmallVector<Attribute> lengths;
  for (const cellc::ScratchSlot &slot : slots)
    lengths.push_back(dimAttr(builder.getContext(), vecLength(slot.type)));
  builder.create<sched::ScratchOp>(loc, kernel, builder.getArrayAttr(lengths));
}

void ScheduleBuilder::buildForward(Block &block, Phase phase, Extent extent) {
  for (Operation &op : block.without_terminator()) {
    if (isa<MatVecOp, StackedMatVecOp>(op)) {
      allocate(op.getResults(), extent);
      ValueRange matrices = op.getOperands().drop_back();
      std::string weight = weightFor(&op, matrices);
      builder.create<sched::GemmOp>(loc, phase, refOf(op.getResult(0)), weight,
                                    refOf(op.getOperands().back()));
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
          refs[result] = makeRef(RefKind::Out);
          gradientRefs[result] = makeRef(RefKind::Dout);
          continue;
        }
        std::string state = nameOf(cell.getStateNames(), index);
        refs[result] = makeRef(RefKind::Next, state);
        gradientRefs[result] = makeRef(RefKind::Dnext, state);
      }
    } else {
      for (Value result : fused.getResults())
        allocate(result, extent);
    }
    SmallVector<RefAttr> args;
    for (Value operand : fused.getOperands())
      args.push_back(refOf(operand));
    for (Value result : fused.getResults())
      args.push_back(refOf(result));
    int64_t kernel = *fused.getKernel();
    bool scan = fused.getScan();
    builder.create<sched::KernelOp>(loc, scan ? Phase::Scan : phase, kernel,
                                    refArray(args));
    noteScratch(fused, kernel, scan);
  }
}

void ScheduleBuilder::buildBackwardProduct(Operation &product, Phase phase,
                                           Extent extent) {
  // The product's data gradient now, its weight gradient once all T*B rows
  // of both factors are known.
  Value vector = product.getOperands().back();
  RefAttr resultGradient = gradientRefOf(product.getResult(0), extent)
                               .value_or(makeRef(RefKind::Step, "<none>"));
  std::string weight = weightOf.lookup(&product);
  if (std::optional<RefAttr> vectorGradient = gradientRefOf(vector, extent))
    builder.create<sched::GemmOp>(loc, phase, *vectorGradient, weight,
                                  resultGradient);
  builder.create<sched::WgradOp>(loc, weight, resultGradient, refOf(vector));
}

/// A backward kernel often yields one value for several operands: a sum's
/// gradient flows to each addend, so LSTM's gate gradient is the gradient
/// of its input projection, of its recurrent product and of its bias. Where
/// this kernel is the sole writer of each (it stores them), the later
/// operands' gradients are the first one's range: the kernel then writes
/// the value into fewer buffers (LSTM: 2 x [T*B, 4H] floats per call, not
/// 3; the input projection's gradient keeps its own), and the products and
/// sums after it read them.
void ScheduleBuilder::shareDuplicateGradients(FusedOp fused, Extent extent) {
  int64_t numForward = *fused.getNumForwardOperands();
  Operation *yield = fused.getBody().front().getTerminator();
  DenseMap<Value, unsigned> firstStored;
  SmallVector<std::optional<unsigned>> sameAs(numForward);
  for (unsigned index = 0; index < numForward; ++index) {
    Value operand = fused.getOperand(index);
    // A product of inputs' gradient stays its own: Cell::withInputProducts
    // hands that buffer to the caller, which nothing else may read.
    auto slot = slots.find(operand);
    bool ofInputs =
        slot != slots.end() && slot->second.extent == Extent::Sequence;
    if (!fused.isStoredResult(index) || gradientRefs.count(operand) || ofInputs)
      continue;
    auto [first, isFirst] =
        firstStored.try_emplace(yield->getOperand(index), index);
    if (!isFirst)
      sameAs[index] = first->second;
  }
  // A vector param's per-row gradient: pgrad sums the first range.
  for (unsigned index = 0; index < numForward; ++index) {
    Value operand = fused.getOperand(index);
    if (!sameAs[index] || refOf(operand).getKind() != RefKind::Param)
      continue;
    std::optional<RefAttr> first =
        gradientRefOf(fused.getOperand(*sameAs[index]), extent);
    if (!first ||
        (first->getKind() != RefKind::Seq && first->getKind() != RefKind::Step))
      continue;
    gradientRefs[operand] = *first;
    builder.create<sched::PgradOp>(loc, refOf(operand).getTarget(), *first);
  }
  shareBufferGradients(fused, extent, sameAs);
}

/// A buffer's values (a stacked product's results) share the gradient
/// buffer of the values they duplicate where every one of them does, each
/// at its own column: the product's data gradient reads them as one block.
void ScheduleBuilder::shareBufferGradients(
    FusedOp fused, Extent extent, ArrayRef<std::optional<unsigned>> sameAs) {
  llvm::StringMap<SmallVector<unsigned>> byBuffer;
  for (auto [index, first] : llvm::enumerate(sameAs))
    if (first && slots.count(fused.getOperand(index)) &&
        !gradientRefs.count(fused.getOperand(index)))
      byBuffer[slots.lookup(fused.getOperand(index)).buffer].push_back(index);
  for (auto &[buffer, indices] : byBuffer) {
    if (indices.size() != rangesOf.lookup(buffer))
      continue;
    std::optional<std::string> shared;
    bool aligned = true;
    for (unsigned index : indices) {
      auto original = slots.find(fused.getOperand(*sameAs[index]));
      const Slot &own = slots.find(fused.getOperand(index))->second;
      aligned = aligned && original != slots.end() &&
                original->second.buffer != buffer &&
                original->second.offset == own.offset &&
                (!shared || *shared == original->second.buffer);
      if (!aligned)
        break;
      shared = original->second.buffer;
    }
    if (!aligned)
      continue;
    for (unsigned index : indices)
      if (std::optional<RefAttr> first =
              gradientRefOf(fused.getOperand(*sameAs[index]), extent))
        gradientRefs[fused.getOperand(index)] = *first;
  }
}

void ScheduleBuilder::buildBackwardKernel(FusedOp fused, Phase phase,
                                          Extent extent) {
  shareDuplicateGradients(fused, extent);
  int64_t numForward = *fused.getNumForwardOperands();
  int64_t numSaved = fused.getNumSaved().value_or(0);
  int64_t kernel = *fused.getKernel();
  noteScratch(fused, kernel, /*scan=*/false);
  // A missing gradient reference is left out here and reported by the
  // plan's own check of the kernel's argument count.
  SmallVector<RefAttr> args;
  for (Value operand : fused.getOperands().take_front(numForward + numSaved))
    args.push_back(refOf(operand));
  for (Value operand : fused.getOperands().drop_front(numForward + numSaved))
    if (std::optional<RefAttr> gradient = gradientRefOf(
            operand.getDefiningOp<CotangentOp>().getValue(), extent))
      args.push_back(*gradient);
  for (auto [index, operand] :
       llvm::enumerate(fused.getOperands().take_front(numForward))) {
    std::optional<RefAttr> gradient = gradientRefOf(operand, extent);
    if (!gradient)
      continue;
    args.push_back(*gradient);
    // Only buffers are zeroed or not: a state's or input's gradient may
    // share a buffer's name.
    bool inBuffer = gradient->getKind() == RefKind::Seq ||
                    gradient->getKind() == RefKind::Step;
    if (inBuffer && fused.isStoredResult(index))
      storedRangesOf[targetName(*gradient)].insert(*gradient);
  }
  builder.create<sched::KernelOp>(loc, phase, kernel, refArray(args));
}

void ScheduleBuilder::buildBackward(Block &block, Phase phase, Extent extent) {
  for (Operation &op : llvm::reverse(block.without_terminator())) {
    if (isa<MatVecOp, StackedMatVecOp>(op)) {
      buildBackwardProduct(op, phase, extent);
      continue;
    }
    auto fused = dyn_cast<FusedOp>(op);
    if (fused && fused.getBackward())
      buildBackwardKernel(fused, phase, extent);
  }
}

void ScheduleBuilder::arrange() {
  Block &body = program.getBody().front();
  SmallVector<Operation *> declarations, operations, reductions;
  for (Operation &op : body) {
    if (isa<sched::WgradOp, sched::PgradOp>(op))
      reductions.push_back(&op);
    else if (isa<sched::GemmOp, sched::KernelOp>(op))
      operations.push_back(&op);
    else
      declarations.push_back(&op);
  }
  for (ArrayRef<Operation *> group :
       {ArrayRef<Operation *>(declarations), ArrayRef<Operation *>(operations),
        ArrayRef<Operation *>(reductions)})
    for (Operation *op : group)
      op->moveBefore(&body, body.end());
}

FailureOr<sched::ProgramOp> ScheduleBuilder::build() {
  FailureOr<cellrt::Precision> precision = cellc::productPrecision(cell);
  if (failed(precision))
    return failure();
  WalkResult unlowered = cell.walk([](FusedOp fused) {
    return fused.getKernel() ? WalkResult::advance() : WalkResult::interrupt();
  });
  if (unlowered.wasInterrupted())
    return cell.emitError()
           << "cell '" << cell.getSymName()
           << "' has no kernels yet: its schedule needs cell-lower-to-loops";
  program = builder.create<sched::ProgramOp>(loc, cell.getSymName(),
                                             cellc::collectDims(cell),
                                             cell.getOwnOutputLength());
  if (*precision != cellrt::Precision::F32)
    program.setPrecisionAttr(
        builder.getStringAttr(cellrt::precisionName(*precision)));
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(&program.getBody().front());
  declareArrays();
  Block *prologue = cell.getPrologueBlock();
  if (prologue) {
    for (auto [bodyArg, prologueArg] :
         llvm::zip(llvm::concat<BlockArgument>(cell.getInputArgs(),
                                               cell.getParamArgs()),
                   prologue->getArguments())) {
      refs[prologueArg] = refOf(bodyArg);
      if (gradientRefs.count(bodyArg))
        gradientRefs[prologueArg] = gradientRefs.find(bodyArg)->second;
    }
    buildForward(*prologue, Phase::Pre, Extent::Sequence);
    for (auto [hoisted, value] : llvm::zip(
             cell.getHoistedArgs(), prologue->getTerminator()->getOperands())) {
      refs[hoisted] = refOf(value);
      slots[hoisted] = slots.lookup(value);
    }
  }
  buildForward(*cell.getBodyBlock(), Phase::Step, Extent::Step);

  bool hasBackward = false;
  cell.walk([&](CotangentOp) { hasBackward = true; });
  if (hasBackward) {
    buildBackward(*cell.getBodyBlock(), Phase::BStep, Extent::Step);
    if (prologue)
      buildBackward(*prologue, Phase::BPre, Extent::Sequence);
  }
  // A gradient buffer whose every range a kernel stores needs no zeroing.
  for (auto &[name, buffer] : buffers)
    if (storedRangesOf.count(name) &&
        storedRangesOf[name].size() == rangesOf.lookup(name))
      buffer.setWritten(true);
  arrange();
  return program;
}

} // namespace

FailureOr<sched::ProgramOp> cellc::buildSchedule(CellOp cell,
                                                 OpBuilder &builder) {
  return ScheduleBuilder(cell, builder).build();
}

namespace {

struct BuildSchedulePass : cell::impl::BuildScheduleBase<BuildSchedulePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A program read with the module may be stale (another --precision,
    // another pipeline): the cell's own schedule replaces it.
    for (auto program : llvm::to_vector(module.getOps<sched::ProgramOp>()))
      program.erase();
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    for (CellOp cell : llvm::to_vector(module.getOps<CellOp>()))
      if (failed(cellc::buildSchedule(cell, builder)))
        return signalPassFailure();
  }
};

} // namespace

FailureOr<cellrt::Plan> cellc::emitPlan(CellOp cell) {
  // The schedule in a module of its own: the cell's module is left as it
  // was. Outside a pass the dialect may not be loaded yet.
  cell.getContext()->getOrLoadDialect<sched::ScheduleDialect>();
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(cell.getLoc());
  OpBuilder builder = OpBuilder::atBlockEnd(scratch->getBody());
  FailureOr<sched::ProgramOp> program = buildSchedule(cell, builder);
  if (failed(program))
    return failure();
  return sched::checkedPlan(*program);
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
