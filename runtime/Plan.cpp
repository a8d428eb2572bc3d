//===- Plan.cpp - Queries on an execution plan and its enums' names -------===//

#include "cellrt/Plan.h"

#include <algorithm>

using namespace cellrt;

//===----------------------------------------------------------------------===//
// Ref and Plan helpers
//===----------------------------------------------------------------------===//

namespace {

/// Whether an enum's values are 0, 1, ... in order (the tables store them
/// as bytes and the reader bounds them by the count).
template <size_t N> constexpr bool isDense(const int (&values)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (values[i] != static_cast<int>(i))
      return false;
  return true;
}

#define CELLRT_ENUM_VALUE(name, value, text) value,
#define CELLRT_ENUM_TEXT(name, value, text) text,
constexpr int kPhaseValues[] = {CELLRT_PLAN_PHASES(CELLRT_ENUM_VALUE)};
constexpr int kRefKindValues[] = {CELLRT_PLAN_REF_KINDS(CELLRT_ENUM_VALUE)};
constexpr int kExtentValues[] = {CELLRT_PLAN_BUFFER_EXTENTS(CELLRT_ENUM_VALUE)};
const char *const kPhaseNames[] = {CELLRT_PLAN_PHASES(CELLRT_ENUM_TEXT)};
const char *const kRefKindNames[] = {CELLRT_PLAN_REF_KINDS(CELLRT_ENUM_TEXT)};
const char *const kExtentNames[] = {
    CELLRT_PLAN_BUFFER_EXTENTS(CELLRT_ENUM_TEXT)};
#undef CELLRT_ENUM_TEXT
#undef CELLRT_ENUM_VALUE
static_assert(isDense(kPhaseValues) && isDense(kRefKindValues) &&
                  isDense(kExtentValues),
              "schedule/PlanEnums.td: number each enum's cases 0, 1, ...");

template <typename Enum, size_t N>
const char *nameIn(const char *const (&names)[N], Enum value) {
  size_t index = static_cast<size_t>(value);
  return index < N ? names[index] : "?";
}

} // namespace

const char *cellrt::refKindName(Ref::Kind kind) {
  return nameIn(kRefKindNames, kind);
}

const char *cellrt::phaseName(Phase phase) {
  return nameIn(kPhaseNames, phase);
}

const char *cellrt::bufferExtentName(BufferDecl::Extent extent) {
  return nameIn(kExtentNames, extent);
}

static bool isNameless(Ref::Kind kind) {
  return kind == Ref::Kind::Out || kind == Ref::Kind::Dout;
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
