//===- PlanLayout.cpp - A plan's widths and indices for one set of sizes --===//

#include "PlanLayout.h"

#include "DimBinder.h"

using namespace cellrt;
using namespace cellrt::detail;

static int64_t paramIndex(const Plan &plan, const std::string &name) {
  return plan.findParam(name) - plan.params.data();
}

/// The index of the array `ref` names, by its kind.
static int64_t arrayIndex(const Plan &plan, const Ref &ref) {
  switch (ref.kind) {
  case Ref::Kind::Input:
  case Ref::Kind::Dinput:
    return plan.inputIndex(ref.name);
  case Ref::Kind::State:
  case Ref::Kind::Next:
  case Ref::Kind::Dnext:
  case Ref::Kind::Dstate:
    return plan.stateIndex(ref.name);
  case Ref::Kind::Param:
    return paramIndex(plan, ref.name);
  case Ref::Kind::Seq:
  case Ref::Kind::Step:
    return plan.bufferIndex(ref.name);
  case Ref::Kind::Out:
  case Ref::Kind::Dout:
    return -1;
  }
  return -1;
}

static OperationLayout layoutOf(const Plan &plan, const Sizes &sizes,
                                const Operation &op) {
  OperationLayout layout;
  for (const Ref &ref : op.operands)
    layout.operands.push_back({arrayIndex(plan, ref),
                               sizes.eval(plan.arrayWidth(ref)),
                               sizes.eval(ref.column)});
  if (op.kind == Operation::Kind::Gemm || op.kind == Operation::Kind::Wgrad)
    layout.weight = plan.weightIndex(op.weight);
  if (op.kind == Operation::Kind::Pgrad)
    layout.param = paramIndex(plan, op.param);
  if (op.kind == Operation::Kind::Kernel) {
    auto scratch = plan.scratch.find(op.kernel);
    if (scratch != plan.scratch.end())
      for (const DimExpr &length : scratch->second)
        layout.scratchLengths.push_back(sizes.eval(length));
  }
  return layout;
}

PlanLayout::PlanLayout(const Plan &plan, const Sizes &sizes) {
  for (const Operation &op : plan.operations)
    operations.push_back(layoutOf(plan, sizes, op));
  for (const std::string &dim : plan.dims)
    dimValues.push_back(sizes.dims.at(dim));
  for (const BufferDecl &buffer : plan.buffers)
    bufferLengths.push_back(sizes.eval(buffer.length));
  for (const VectorDecl &state : plan.states)
    stateWidths.push_back(sizes.eval(state.length));
  for (const VectorDecl &input : plan.inputs)
    inputWidths.push_back(sizes.eval(input.length));
  for (const ParamDecl &param : plan.params) {
    int64_t count = 1;
    for (const DimExpr &extent : param.shape)
      count *= sizes.eval(extent);
    paramCounts.push_back(count);
    paramRows.push_back(sizes.eval(param.shape[0]));
  }
  for (const WeightDecl &weight : plan.weights) {
    std::vector<int64_t> indices;
    for (const std::string &name : weight.params)
      indices.push_back(paramIndex(plan, name));
    weightParams.push_back(std::move(indices));
    weightRows.push_back(sizes.eval(plan.weightRows(weight)));
    weightCols.push_back(sizes.eval(plan.weightCols(weight)));
  }
  kernelOutputWidth = sizes.eval(plan.kernelOutputWidth());
}
