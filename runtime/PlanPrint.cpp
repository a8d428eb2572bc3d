//===- PlanPrint.cpp - The text form of an execution plan -----------------===//
//
// The text is for people (cellc -emit=plan) and tests; the runtime never
// reads it (objects carry the tables, PlanTables.cpp).
//
//===----------------------------------------------------------------------===//

#include "cellrt/Plan.h"

using namespace cellrt;

std::string cellrt::locateOperation(const Operation &op) {
  if (op.line > 0)
    return "plan line " + std::to_string(op.line);
  return "plan operation '" + printOperation(op) + "'";
}

std::string cellrt::printOperation(const Operation &op) {
  if (op.kind == Operation::Kind::Wgrad)
    return "wgrad " + op.weight + " " + op.wgradDy().str() + " " +
           op.wgradX().str();
  if (op.kind == Operation::Kind::Pgrad)
    return "pgrad " + op.param + " " +
           (op.operands.empty() ? std::string() : op.operands[0].str());
  std::string out = phaseName(op.phase);
  if (op.kind == Operation::Kind::Gemm && op.operands.size() == 2)
    return out + " gemm " + op.gemmOutput().str() + " " + op.weight + " " +
           op.gemmInput().str();
  out += op.kind == Operation::Kind::Gemm
             ? " gemm"
             : " kernel " + std::to_string(op.kernel);
  for (const Ref &ref : op.operands)
    out += " " + ref.str();
  return out;
}

std::string cellrt::printPlan(const Plan &plan) {
  std::string out = "cellc-plan " + std::to_string(plan.version) + "\n";
  out += "cell " + plan.cellName + "\n";
  // f32 is the default; plans without the line read as before.
  if (plan.precision != Precision::F32)
    out += std::string("precision ") + precisionName(plan.precision) + "\n";
  out += "dims";
  for (const std::string &dim : plan.dims)
    out += " " + dim;
  out += "\n";
  for (const VectorDecl &input : plan.inputs)
    out += "input " + input.name + " " + input.length.str() +
           (input.gradientWritten ? " written\n" : "\n");
  for (const VectorDecl &state : plan.states)
    out += "state " + state.name + " " + state.length.str() + "\n";
  for (const ParamDecl &param : plan.params) {
    out += "param " + param.name;
    for (const DimExpr &extent : param.shape)
      out += " " + extent.str();
    // Without an initialiser the line is as it always was.
    if (!param.init.isNone())
      out += " init " + param.init.str();
    out += "\n";
  }
  out += "output " + plan.outputWidth.str() + "\n";
  for (const VectorDecl &probe : plan.probes)
    out += "probe " + probe.name + " " + probe.length.str() + "\n";
  for (const BufferDecl &buffer : plan.buffers)
    out += std::string("buffer ") + bufferExtentName(buffer.extent) + " " +
           buffer.name + " " + buffer.length.str() +
           (buffer.written ? " written\n" : "\n");
  for (const WeightDecl &weight : plan.weights) {
    out += "weight " + weight.name;
    for (const std::string &param : weight.params)
      out += " " + param;
    out += "\n";
  }
  for (const Operation &op : plan.operations)
    out += printOperation(op) + "\n";
  for (const auto &[kernel, lengths] : plan.scratch) {
    out += "scratch " + std::to_string(kernel);
    for (const DimExpr &length : lengths)
      out += " " + length.str();
    out += "\n";
  }
  return out;
}
