//===- Plan.cpp - Queries on an execution plan and its enums' names -------===//

#include "cellrt/Plan.h"

#include <algorithm>

using namespace cellrt;

//===----------------------------------------------------------------------===//
// Ref and Plan helpers
//===----------------------------------------------------------------------===//

const char *cellrt::refKindName(Ref::Kind kind) {
  switch (kind) {
  case Ref::Kind::Input:
    return "input";
  case Ref::Kind::State:
    return "state";
  case Ref::Kind::Next:
    return "next";
  case Ref::Kind::Param:
    return "param";
  case Ref::Kind::Seq:
    return "seq";
  case Ref::Kind::Step:
    return "step";
  case Ref::Kind::Out:
    return "out";
  case Ref::Kind::Dnext:
    return "dnext";
  case Ref::Kind::Dstate:
    return "dstate";
  case Ref::Kind::Dout:
    return "dout";
  case Ref::Kind::Dinput:
    return "dinput";
  }
  return "?";
}

static bool isNameless(Ref::Kind kind) {
  return kind == Ref::Kind::Out || kind == Ref::Kind::Dout;
}

const char *cellrt::phaseName(Phase phase) {
  switch (phase) {
  case Phase::Pre:
    return "pre";
  case Phase::Step:
    return "step";
  case Phase::Scan:
    return "scan";
  case Phase::BStep:
    return "bstep";
  case Phase::BPre:
    return "bpre";
  case Phase::End:
    return "end";
  }
  return "?";
}

bool Ref::operator==(const Ref &other) const {
  return kind == other.kind && name == other.name && column == other.column;
}

std::string Ref::str() const {
  std::string text = refKindName(kind);
  if (!isNameless(kind))
    text += ":" + name;
  if (column != DimExpr())
    text += "+" + column.str();
  return text;
}

template <typename Decl>
static int64_t indexByName(const std::vector<Decl> &decls,
                           const std::string &name) {
  for (size_t i = 0; i < decls.size(); ++i)
    if (decls[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

template <typename Decl>
static const Decl *findByName(const std::vector<Decl> &decls,
                              const std::string &name) {
  int64_t index = indexByName(decls, name);
  return index < 0 ? nullptr : &decls[index];
}

const VectorDecl *Plan::findInput(const std::string &name) const {
  return findByName(inputs, name);
}
const VectorDecl *Plan::findState(const std::string &name) const {
  return findByName(states, name);
}
const ParamDecl *Plan::findParam(const std::string &name) const {
  return findByName(params, name);
}
const BufferDecl *Plan::findBuffer(const std::string &name) const {
  return findByName(buffers, name);
}
const WeightDecl *Plan::findWeight(const std::string &name) const {
  return findByName(weights, name);
}
int64_t Plan::inputIndex(const std::string &name) const {
  return indexByName(inputs, name);
}
int64_t Plan::stateIndex(const std::string &name) const {
  return indexByName(states, name);
}
int64_t Plan::paramIndex(const std::string &name) const {
  return indexByName(params, name);
}
int64_t Plan::bufferIndex(const std::string &name) const {
  return indexByName(buffers, name);
}
int64_t Plan::weightIndex(const std::string &name) const {
  return indexByName(weights, name);
}

DimExpr Plan::arrayWidth(const Ref &ref) const {
  switch (ref.kind) {
  case Ref::Kind::Input:
  case Ref::Kind::Dinput:
    return findInput(ref.name)->length;
  case Ref::Kind::State:
  case Ref::Kind::Next:
  case Ref::Kind::Dnext:
  case Ref::Kind::Dstate:
    return findState(ref.name)->length;
  case Ref::Kind::Param:
    return findParam(ref.name)->shape.back();
  case Ref::Kind::Seq:
  case Ref::Kind::Step:
    return findBuffer(ref.name)->length;
  case Ref::Kind::Out:
  case Ref::Kind::Dout:
    return kernelOutputWidth();
  }
  return DimExpr();
}

DimExpr Plan::kernelOutputWidth() const {
  DimExpr width = outputWidth;
  for (const VectorDecl &probe : probes)
    width = width + probe.length;
  return width;
}

DimExpr Plan::weightRows(const WeightDecl &weight) const {
  DimExpr rows;
  for (const std::string &param : weight.params)
    rows = rows + findParam(param)->shape[0];
  return rows;
}

DimExpr Plan::weightCols(const WeightDecl &weight) const {
  return findParam(weight.params.front())->shape[1];
}

int64_t Plan::numKernelsUsed() const {
  int64_t count = 0;
  for (const Operation &op : operations)
    if (op.kind == Operation::Kind::Kernel)
      count = std::max(count, op.kernel + 1);
  return count;
}

bool Plan::hasBackward() const {
  return std::any_of(operations.begin(), operations.end(),
                     [](const Operation &op) { return isBackward(op.phase); });
}

const char *cellrt::precisionName(Precision precision) {
  return precision == Precision::BF16 ? "bf16" : "f32";
}

std::optional<Precision> cellrt::parsePrecision(std::string_view name) {
  if (name == "f32")
    return Precision::F32;
  if (name == "bf16")
    return Precision::BF16;
  return std::nullopt;
}
