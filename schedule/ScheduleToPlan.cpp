//===- ScheduleToPlan.cpp - A schedule as the runtime's plan --------------===//
//
// One declaration or operation of the program is one entry of the plan's
// tables (docs/plan-format.md), in program order; cellrt::validatePlan
// checks the result.
//
//===----------------------------------------------------------------------===//

#include "schedule/Schedule.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::sched;

namespace {

// The dialect's enums and the runtime's come from one list
// (schedule/PlanEnums.td), so a case converts by its value.
#define CELLC_SAME_CASE(Runtime, Schedule)                                     \
  static_assert(static_cast<int>(cellrt::Runtime) ==                           \
                static_cast<int>(Schedule));
CELLC_SAME_CASE(Phase::End, Phase::End)
CELLC_SAME_CASE(Ref::Kind::Dinput, RefKind::Dinput)
CELLC_SAME_CASE(BufferDecl::Extent::Step, Extent::Step)
#undef CELLC_SAME_CASE

cellrt::Phase runtimePhaseOf(Phase phase) {
  return static_cast<cellrt::Phase>(static_cast<int>(phase));
}

std::string nameOf(FlatSymbolRefAttr symbol) {
  return symbol ? symbol.getValue().str() : std::string();
}

cellrt::Ref runtimeRefOf(Attribute attr) {
  auto ref = attr.cast<RefAttr>();
  cellrt::Ref result;
  result.kind = runtimeKindOf(ref.getKind());
  result.name = nameOf(ref.getTarget());
  result.column = ref.getColumn();
  return result;
}

std::vector<cellc::DimExpr> dimsOf(ArrayAttr array) {
  std::vector<cellc::DimExpr> dims;
  for (Attribute dim : array)
    dims.push_back(dim.cast<cell::DimExprAttr>().getValue());
  return dims;
}

cellrt::Operation operationOf(Phase phase, cellrt::Operation::Kind kind,
                              std::vector<cellrt::Ref> operands) {
  cellrt::Operation op;
  op.phase = runtimePhaseOf(phase);
  op.kind = kind;
  op.operands = std::move(operands);
  return op;
}

/// Adds one declaration or operation of a program to `plan`.
void addToPlan(Operation &op, cellrt::Plan &plan) {
  using Kind = cellrt::Operation::Kind;
  TypeSwitch<Operation *>(&op)
      .Case([&](InputOp input) {
        plan.inputs.push_back({input.getSymName().str(), input.getLength(),
                               input.getWrittenGradient()});
      })
      .Case([&](StateOp state) {
        plan.states.push_back({state.getSymName().str(), state.getLength()});
      })
      .Case([&](ProbeOp probe) {
        plan.probes.push_back({probe.getSymName().str(), probe.getLength()});
      })
      .Case([&](ParamOp param) {
        cellrt::ParamDecl decl{
            param.getSymName().str(), dimsOf(param.getShape()), {}};
        if (std::optional<cell::InitAttr> init = param.getInit())
          decl.init = init->getScheme();
        plan.params.push_back(std::move(decl));
      })
      .Case([&](BufferOp buffer) {
        cellrt::BufferDecl decl;
        decl.extent = static_cast<cellrt::BufferDecl::Extent>(
            static_cast<int>(buffer.getExtent()));
        decl.name = buffer.getSymName().str();
        decl.length = buffer.getLength();
        decl.written = buffer.getWritten();
        plan.buffers.push_back(std::move(decl));
      })
      .Case([&](WeightOp weight) {
        cellrt::WeightDecl decl{weight.getSymName().str(), {}};
        for (Attribute param : weight.getParams())
          decl.params.push_back(nameOf(param.cast<FlatSymbolRefAttr>()));
        plan.weights.push_back(std::move(decl));
      })
      .Case([&](ScratchOp scratch) {
        std::vector<cellc::DimExpr> &lengths =
            plan.scratch[scratch.getKernel()];
        for (const cellc::DimExpr &length : dimsOf(scratch.getLengths()))
          lengths.push_back(length);
      })
      .Case([&](GemmOp gemm) {
        cellrt::Operation op = operationOf(
            gemm.getPhase(), Kind::Gemm,
            {runtimeRefOf(gemm.getOutAttr()), runtimeRefOf(gemm.getInAttr())});
        op.weight = gemm.getWeight().str();
        plan.operations.push_back(std::move(op));
      })
      .Case([&](KernelOp kernel) {
        std::vector<cellrt::Ref> args;
        for (Attribute arg : kernel.getArgs())
          args.push_back(runtimeRefOf(arg));
        cellrt::Operation op =
            operationOf(kernel.getPhase(), Kind::Kernel, std::move(args));
        op.kernel = kernel.getKernel();
        plan.operations.push_back(std::move(op));
      })
      .Case([&](WgradOp wgrad) {
        cellrt::Operation op = operationOf(
            Phase::End, Kind::Wgrad,
            {runtimeRefOf(wgrad.getDyAttr()), runtimeRefOf(wgrad.getXAttr())});
        op.weight = wgrad.getWeight().str();
        plan.operations.push_back(std::move(op));
      })
      .Case([&](PgradOp pgrad) {
        cellrt::Operation op = operationOf(
            Phase::End, Kind::Pgrad, {runtimeRefOf(pgrad.getSourceAttr())});
        op.param = pgrad.getParam().str();
        plan.operations.push_back(std::move(op));
      });
}

} // namespace

RefKind mlir::sched::refKindOf(cellrt::Ref::Kind kind) {
  return static_cast<RefKind>(static_cast<int>(kind));
}

cellrt::Ref::Kind mlir::sched::runtimeKindOf(RefKind kind) {
  return static_cast<cellrt::Ref::Kind>(static_cast<int>(kind));
}

cellrt::Plan mlir::sched::toPlan(ProgramOp program) {
  cellrt::Plan plan;
  plan.cellName = program.getCell().str();
  if (std::optional<StringRef> precision = program.getPrecision())
    plan.precision = cellrt::parsePrecision(precision->str())
                         .value_or(cellrt::Precision::F32);
  for (Attribute dim : program.getDims())
    plan.dims.push_back(dim.cast<StringAttr>().str());
  plan.outputWidth = program.getOutputWidth();
  for (Operation &op : program.getBody().front())
    addToPlan(op, plan);
  return plan;
}

FailureOr<cellrt::Plan> mlir::sched::checkedPlan(ProgramOp program) {
  cellrt::Plan plan = toPlan(program);
  cellrt::Status checked = cellrt::validatePlan(plan);
  if (!checked.ok()) {
    program.emitError() << "the schedule of cell '" << program.getCell()
                        << "' does not pass the runtime's checks: "
                        << checked.message() << "\n"
                        << cellrt::printPlan(plan);
    return failure();
  }
  return plan;
}
