//===- PlanTables.cpp - Encode and decode a plan's binary tables ----------===//
//
// Little-endian, fixed-width fields (docs/plan-format.md, "The tables").
// Names travel once, in their declaration; everything else refers to a
// declaration by its index, so loading resolves nothing by name. The reader
// checks each read against the size and each index against its table, so a
// damaged object is an error, never a crash.
//
//===----------------------------------------------------------------------===//

#include "cellrt/PlanTables.h"

#include <cstring>
#include <limits>

using namespace cellrt;

namespace {

/// Which table a reference of `kind` indexes; -1: none (`out`, `dout`).
enum class Table { None, Inputs, States, Params, Buffers };

Table tableOf(Ref::Kind kind) {
  switch (kind) {
  case Ref::Kind::Input:
  case Ref::Kind::Dinput:
    return Table::Inputs;
  case Ref::Kind::State:
  case Ref::Kind::Next:
  case Ref::Kind::Dnext:
  case Ref::Kind::Dstate:
    return Table::States;
  case Ref::Kind::Param:
    return Table::Params;
  case Ref::Kind::Seq:
  case Ref::Kind::Step:
    return Table::Buffers;
  case Ref::Kind::Out:
  case Ref::Kind::Dout:
    return Table::None;
  }
  return Table::None;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

class TableWriter {
public:
  explicit TableWriter(const Plan &plan) : plan(plan) {}
  std::string write();

private:
  template <typename T> void put(T value) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out.append(bytes, sizeof(T));
  }
  void putCount(size_t count) { put(static_cast<uint32_t>(count)); }
  void putString(const std::string &text) {
    putCount(text.size());
    out += text;
  }
  /// The constant, then one coefficient per dim, in the dims' order.
  void putExpr(const DimExpr &expr);
  void putVectors(const std::vector<VectorDecl> &decls, bool withFlags);
  void putDeclarations();
  void putOperation(const Operation &op);
  int32_t indexOf(const Ref &ref) const;

  const Plan &plan;
  std::string out;
};

void TableWriter::putExpr(const DimExpr &expr) {
  put(expr.getConstant());
  for (const std::string &dim : plan.dims) {
    int64_t coefficient = 0;
    for (const DimExpr::Term &term : expr.getTerms())
      if (term.first == dim)
        coefficient = term.second;
    put(coefficient);
  }
}

void TableWriter::putVectors(const std::vector<VectorDecl> &decls,
                             bool withFlags) {
  putCount(decls.size());
  for (const VectorDecl &decl : decls) {
    putString(decl.name);
    putExpr(decl.length);
    if (withFlags)
      put(static_cast<uint8_t>(decl.gradientWritten));
  }
}

void TableWriter::putDeclarations() {
  putString(plan.cellName);
  put(static_cast<uint8_t>(plan.precision));
  putCount(plan.dims.size());
  for (const std::string &dim : plan.dims)
    putString(dim);
  putVectors(plan.inputs, /*withFlags=*/true);
  putVectors(plan.states, /*withFlags=*/false);
  putCount(plan.params.size());
  for (const ParamDecl &param : plan.params) {
    putString(param.name);
    put(static_cast<uint8_t>(param.shape.size()));
    for (const DimExpr &extent : param.shape)
      putExpr(extent);
    put(static_cast<uint8_t>(param.init.kind));
    put(param.init.value);
  }
  putExpr(plan.outputWidth);
  putVectors(plan.probes, /*withFlags=*/false);
  putCount(plan.buffers.size());
  for (const BufferDecl &buffer : plan.buffers) {
    put(static_cast<uint8_t>(buffer.extent));
    putString(buffer.name);
    putExpr(buffer.length);
    put(static_cast<uint8_t>(buffer.written));
  }
  putCount(plan.weights.size());
  for (const WeightDecl &weight : plan.weights) {
    putString(weight.name);
    putCount(weight.params.size());
    for (const std::string &param : weight.params)
      put(static_cast<int32_t>(plan.paramIndex(param)));
  }
}

int32_t TableWriter::indexOf(const Ref &ref) const {
  switch (tableOf(ref.kind)) {
  case Table::Inputs:
    return static_cast<int32_t>(plan.inputIndex(ref.name));
  case Table::States:
    return static_cast<int32_t>(plan.stateIndex(ref.name));
  case Table::Params:
    return static_cast<int32_t>(plan.paramIndex(ref.name));
  case Table::Buffers:
    return static_cast<int32_t>(plan.bufferIndex(ref.name));
  case Table::None:
    break;
  }
  return -1;
}

void TableWriter::putOperation(const Operation &op) {
  put(static_cast<uint8_t>(op.phase));
  put(static_cast<uint8_t>(op.kind));
  int64_t declaration =
      op.kind == Operation::Kind::Pgrad    ? plan.paramIndex(op.param)
      : op.kind == Operation::Kind::Kernel ? -1
                                           : plan.weightIndex(op.weight);
  put(static_cast<int32_t>(declaration));
  put(op.kernel);
  putCount(op.operands.size());
  for (const Ref &ref : op.operands) {
    put(static_cast<uint8_t>(ref.kind));
    put(indexOf(ref));
    putExpr(ref.column);
  }
}

std::string TableWriter::write() {
  out.assign(kPlanTablesMagic, sizeof kPlanTablesMagic);
  put(kPlanTablesVersion);
  put(uint32_t(0));
  put(uint64_t(0)); // The size, filled in at the end.
  putDeclarations();
  putCount(plan.operations.size());
  for (const Operation &op : plan.operations)
    putOperation(op);
  putCount(plan.scratch.size());
  for (const auto &[kernel, lengths] : plan.scratch) {
    put(kernel);
    putCount(lengths.size());
    for (const DimExpr &length : lengths)
      putExpr(length);
  }
  uint64_t size = out.size();
  std::memcpy(&out[16], &size, sizeof size);
  return out;
}

} // namespace

std::string cellrt::encodePlan(const Plan &plan) {
  return TableWriter(plan).write();
}
