//===- PlanTablesRead.cpp - Decode a plan's binary tables -----------------===//
//
// The reader of PlanTables.cpp's format. Every read is bounds-checked,
// every count is bounded by the bytes left and every index by its table:
// a truncated or damaged object gives an error naming the byte, and what
// decodes is then held to validatePlan's rules.
//
//===----------------------------------------------------------------------===//

#include "cellrt/PlanTables.h"

#include <cstring>

using namespace cellrt;

namespace {

class TableReader {
public:
  explicit TableReader(std::string_view bytes) : bytes(bytes) {}
  Expected<Plan> read();

private:
  bool fail(const std::string &message) {
    if (problem.empty())
      problem = "plan tables: " + message + " (at byte " + std::to_string(pos) +
                " of " + std::to_string(bytes.size()) + ")";
    return false;
  }
  template <typename T> bool get(T &value) {
    if (bytes.size() - pos < sizeof(T))
      return fail("they end too early");
    std::memcpy(&value, bytes.data() + pos, sizeof(T));
    pos += sizeof(T);
    return true;
  }
  /// An enum stored as a byte, one of its `count` values.
  template <typename E> bool getEnum(E &value, int count, const char *what) {
    uint8_t raw;
    if (!get(raw))
      return false;
    if (raw >= count)
      return fail(std::string("unknown ") + what + " " + std::to_string(raw));
    value = static_cast<E>(raw);
    return true;
  }
  /// A count of elements of at least `elementBytes` bytes each.
  bool getCount(size_t &count, size_t elementBytes = 1);
  bool getString(std::string &text);
  bool getExpr(DimExpr &expr);
  bool getIndex(int32_t &index, size_t tableSize, const char *what);
  bool getVectors(std::vector<VectorDecl> &decls, bool withFlags);
  bool getParams();
  bool getBuffers();
  bool getWeights();
  bool getRef(Ref &ref);
  bool getOperation(Operation &op);
  bool getScratch();
  bool getAll();

  std::string_view bytes;
  size_t pos = 0;
  std::string problem;
  Plan plan;
};

} // namespace

bool TableReader::getCount(size_t &count, size_t elementBytes) {
  uint32_t raw;
  if (!get(raw))
    return false;
  if (raw > (bytes.size() - pos) / elementBytes)
    return fail("a count of " + std::to_string(raw) +
                " is larger than the bytes left");
  count = raw;
  return true;
}

bool TableReader::getString(std::string &text) {
  size_t size;
  if (!getCount(size))
    return false;
  text.assign(bytes.data() + pos, size);
  pos += size;
  return true;
}

bool TableReader::getExpr(DimExpr &expr) {
  int64_t constant;
  if (!get(constant))
    return false;
  expr = DimExpr::constant(constant);
  for (const std::string &dim : plan.dims) {
    int64_t coefficient;
    if (!get(coefficient))
      return false;
    if (coefficient != 0)
      expr = expr + DimExpr::symbol(dim, coefficient);
  }
  return true;
}

bool TableReader::getIndex(int32_t &index, size_t tableSize, const char *what) {
  if (!get(index))
    return false;
  if (index < 0 || static_cast<size_t>(index) >= tableSize)
    return fail(std::string(what) + " index " + std::to_string(index) +
                " is outside its table of " + std::to_string(tableSize));
  return true;
}

bool TableReader::getVectors(std::vector<VectorDecl> &decls, bool withFlags) {
  size_t count;
  if (!getCount(count, 4))
    return false;
  decls.resize(count);
  for (VectorDecl &decl : decls) {
    uint8_t flags = 0;
    if (!getString(decl.name) || !getExpr(decl.length) ||
        (withFlags && !get(flags)))
      return false;
    decl.gradientWritten = flags & 1;
  }
  return true;
}

bool TableReader::getParams() {
  size_t count;
  if (!getCount(count, 4))
    return false;
  plan.params.resize(count);
  for (ParamDecl &param : plan.params) {
    uint8_t rank;
    if (!getString(param.name) || !get(rank))
      return false;
    if (rank != 1 && rank != 2)
      return fail("param '" + param.name + "' has rank " +
                  std::to_string(rank));
    param.shape.resize(rank);
    for (DimExpr &extent : param.shape)
      if (!getExpr(extent))
        return false;
    if (!getEnum(param.init.kind,
                 static_cast<int>(InitScheme::Kind::FanOut) + 1,
                 "initialiser") ||
        !get(param.init.value))
      return false;
  }
  return true;
}

bool TableReader::getBuffers() {
  size_t count;
  if (!getCount(count, 4))
    return false;
  plan.buffers.resize(count);
  for (BufferDecl &buffer : plan.buffers) {
    uint8_t written;
    if (!getEnum(buffer.extent, kNumBufferExtents, "buffer extent") ||
        !getString(buffer.name) || !getExpr(buffer.length) || !get(written))
      return false;
    buffer.written = written & 1;
  }
  return true;
}

bool TableReader::getWeights() {
  size_t count;
  if (!getCount(count, 4))
    return false;
  plan.weights.resize(count);
  for (WeightDecl &weight : plan.weights) {
    size_t params;
    if (!getString(weight.name) || !getCount(params, 4))
      return false;
    for (size_t i = 0; i < params; ++i) {
      int32_t index;
      if (!getIndex(index, plan.params.size(), "param"))
        return false;
      weight.params.push_back(plan.params[index].name);
    }
  }
  return true;
}

bool TableReader::getRef(Ref &ref) {
  int32_t index;
  if (!getEnum(ref.kind, kNumRefKinds, "reference kind"))
    return false;
  auto resolve = [&](const auto &table) {
    if (!getIndex(index, table.size(), refKindName(ref.kind)))
      return false;
    ref.name = table[index].name;
    return true;
  };
  bool named = true;
  switch (ref.kind) {
  case Ref::Kind::Input:
  case Ref::Kind::Dinput:
    named = resolve(plan.inputs);
    break;
  case Ref::Kind::State:
  case Ref::Kind::Next:
  case Ref::Kind::Dnext:
  case Ref::Kind::Dstate:
    named = resolve(plan.states);
    break;
  case Ref::Kind::Param:
    named = resolve(plan.params);
    break;
  case Ref::Kind::Seq:
  case Ref::Kind::Step:
    named = resolve(plan.buffers);
    break;
  case Ref::Kind::Out:
  case Ref::Kind::Dout:
    named = get(index);
    ref.name.clear();
    break;
  }
  return named && getExpr(ref.column);
}

bool TableReader::getOperation(Operation &op) {
  int32_t declaration;
  size_t operands;
  if (!getEnum(op.phase, kNumPhases, "phase") ||
      !getEnum(op.kind, static_cast<int>(Operation::Kind::Pgrad) + 1,
               "operation kind"))
    return false;
  if (op.kind == Operation::Kind::Pgrad) {
    if (!getIndex(declaration, plan.params.size(), "param"))
      return false;
    op.param = plan.params[declaration].name;
  } else if (op.kind != Operation::Kind::Kernel) {
    if (!getIndex(declaration, plan.weights.size(), "weight"))
      return false;
    op.weight = plan.weights[declaration].name;
  } else if (!get(declaration)) {
    return false;
  }
  if (!get(op.kernel) || !getCount(operands, 5))
    return false;
  op.operands.resize(operands);
  for (Ref &ref : op.operands)
    if (!getRef(ref))
      return false;
  return true;
}

bool TableReader::getScratch() {
  size_t count;
  if (!getCount(count, 12))
    return false;
  for (size_t i = 0; i < count; ++i) {
    int64_t kernel;
    size_t lengths;
    if (!get(kernel) || !getCount(lengths, 8))
      return false;
    if (plan.scratch.count(kernel))
      return fail("kernel " + std::to_string(kernel) +
                  " has its scratch listed twice");
    std::vector<DimExpr> &exprs = plan.scratch[kernel];
    exprs.resize(lengths);
    for (DimExpr &length : exprs)
      if (!getExpr(length))
        return false;
  }
  return true;
}

bool TableReader::getAll() {
  size_t dims, operations;
  if (!getString(plan.cellName) ||
      !getEnum(plan.precision, static_cast<int>(Precision::BF16) + 1,
               "precision") ||
      !getCount(dims, 4))
    return false;
  plan.dims.resize(dims);
  for (std::string &dim : plan.dims)
    if (!getString(dim))
      return false;
  if (!getVectors(plan.inputs, /*withFlags=*/true) ||
      !getVectors(plan.states, /*withFlags=*/false) || !getParams() ||
      !getExpr(plan.outputWidth) ||
      !getVectors(plan.probes, /*withFlags=*/false) || !getBuffers() ||
      !getWeights() || !getCount(operations, 14))
    return false;
  plan.operations.resize(operations);
  for (Operation &op : plan.operations)
    if (!getOperation(op))
      return false;
  return getScratch();
}

Expected<Plan> TableReader::read() {
  uint32_t version, reserved;
  uint64_t size;
  if (bytes.size() < kPlanTablesHeaderSize ||
      std::memcmp(bytes.data(), kPlanTablesMagic, sizeof kPlanTablesMagic))
    return Status::error("plan tables: no header (they must start with "
                         "cellc's plan magic)");
  pos = sizeof kPlanTablesMagic;
  get(version);
  get(reserved);
  get(size);
  if (version != kPlanTablesVersion)
    return Status::error("plan tables: version " + std::to_string(version) +
                         ", but this runtime reads version " +
                         std::to_string(kPlanTablesVersion) +
                         ": recompile the cell with the cellc of this runtime");
  if (size != bytes.size())
    return Status::error("plan tables: the header says " +
                         std::to_string(size) + " bytes, but there are " +
                         std::to_string(bytes.size()));
  if (!getAll())
    return Status::error(problem);
  if (pos != bytes.size())
    return Status::error("plan tables: " + std::to_string(bytes.size() - pos) +
                         " bytes follow the last table");
  Status status = validatePlan(plan);
  if (!status.ok())
    return status;
  return std::move(plan);
}

Expected<Plan> cellrt::decodePlan(std::string_view bytes) {
  return TableReader(bytes).read();
}

size_t cellrt::planTablesSize(const char *tables) {
  // strncmp stops at a shorter string's NUL; the magic ends in one.
  if (std::strncmp(tables, kPlanTablesMagic, sizeof kPlanTablesMagic - 1) ||
      tables[sizeof kPlanTablesMagic - 1] != '\0')
    return 0;
  uint64_t size;
  std::memcpy(&size, tables + 16, sizeof size);
  return size < kPlanTablesHeaderSize ? 0 : static_cast<size_t>(size);
}

Expected<Plan> cellrt::decodePlanImage(const char *tables) {
  // Objects from before the tables carried the plan as text.
  if (std::strncmp(tables, "cellc-plan ", 11) == 0)
    return Status::error("the object carries its plan as text, from a cellc "
                         "older than this runtime: recompile the cell with "
                         "this cellc");
  size_t size = planTablesSize(tables);
  if (size == 0)
    return Status::error("the object's plan does not start with cellc's "
                         "plan magic: recompile the cell with this cellc");
  return decodePlan(std::string_view(tables, size));
}
