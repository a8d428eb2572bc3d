//===- PlanValidate.cpp - Every rule of an execution plan, in one place ---===//
//
// The decoder of an object's tables, the schedule's verifier (sched.program)
// and Cell::withInputProducts all check plans here, so a rule is written
// once and a plan the runtime refuses can never leave the compiler.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Plan.h"

#include <algorithm>
#include <cctype>
#include <set>

using namespace cellrt;

namespace {

using K = Ref::Kind;

std::string quote(const std::string &text) { return "'" + text + "'"; }

bool isIdentifier(const std::string &text) {
  if (text.empty() ||
      !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_'))
    return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// True when `expr` is negative for every positive value of its dims.
bool provablyNegative(const DimExpr &expr) {
  // With all coefficients <= 0 the largest value is at every dim = 1.
  int64_t largest = expr.getConstant();
  for (const DimExpr::Term &term : expr.getTerms()) {
    if (term.second > 0)
      return false;
    largest += term.second;
  }
  return largest < 0;
}

class PlanValidator {
public:
  explicit PlanValidator(const Plan &plan) : plan(plan) {}
  Status validate();

private:
  Status error(const std::string &message) const {
    return Status::error("plan: " + message);
  }
  /// An error in the operation being checked, located by its text line or
  /// its text.
  Status opError(const std::string &message) const;
  Status checkName(const std::string &space, const std::string &name);
  Status checkDim(const DimExpr &expr, const std::string &where) const {
    std::string problem = unknownDim(expr, where);
    return problem.empty() ? Status::success() : error(problem);
  }
  std::string unknownDim(const DimExpr &expr, const std::string &where) const;
  Status checkDeclarations();
  Status checkParam(const ParamDecl &param);
  Status checkWeight(const WeightDecl &weight) const;
  Status checkScratch() const;
  Status checkForm(const Operation &op) const;
  Status checkRef(const Ref &ref) const;
  Status allowed(const Ref &ref, std::initializer_list<K> kinds,
                 const std::string &role) const;
  Status checkOperation(const Operation &op) const;
  Status checkBackwardOperation(const Operation &op) const;
  Status checkWidth(const Ref &ref, const DimExpr &needed,
                    const std::string &role) const;
  Status checkWrittenBuffers(const Operation &op,
                             std::set<std::string> &storedByKernels) const;
  Status checkOperations();

  const Plan &plan;
  /// The declared names per namespace (`param`, `buffer`, ...).
  std::set<std::pair<std::string, std::string>> declared;
  const Operation *current = nullptr;
};

} // namespace

Status PlanValidator::opError(const std::string &message) const {
  return Status::error(locateOperation(*current) + ": " + message);
}

Status PlanValidator::checkName(const std::string &space,
                                const std::string &name) {
  // A state's new value is probed by its primed name (`h'`).
  std::string base = name;
  if (space == "probe" && !base.empty() && base.back() == '\'')
    base.pop_back();
  if (!isIdentifier(base))
    return error(space + " name " + quote(name) + " is not an identifier");
  if (!declared.insert({space, name}).second)
    return error(space + " " + quote(name) + " is declared twice");
  return Status::success();
}

/// "" or the dimension `expr` uses that the plan does not declare.
std::string PlanValidator::unknownDim(const DimExpr &expr,
                                      const std::string &where) const {
  for (const DimExpr::Term &term : expr.getTerms())
    if (std::find(plan.dims.begin(), plan.dims.end(), term.first) ==
        plan.dims.end())
      return "unknown dimension " + quote(term.first) + " in " + where +
             " (declare it in 'dims' first)";
  return "";
}

Status PlanValidator::checkParam(const ParamDecl &param) {
  Status status;
  if (!(status = checkName("param", param.name)).ok())
    return status;
  if (param.shape.size() != 1 && param.shape.size() != 2)
    return error("param " + quote(param.name) +
                 " must have one extent (a vector) or two (a matrix), not " +
                 std::to_string(param.shape.size()));
  for (const DimExpr &extent : param.shape)
    if (!(status = checkDim(extent, "param " + quote(param.name))).ok())
      return status;
  if (param.init.isNone())
    return Status::success();
  std::string problem = checkInitValue(param.init);
  if (problem.empty())
    problem = checkInitRank(param.init, param.shape.size());
  if (!problem.empty())
    return error("param " + quote(param.name) + ": " + problem);
  return Status::success();
}

Status PlanValidator::checkDeclarations() {
  if (plan.cellName.empty())
    return error("missing the cell's name");
  if (!isIdentifier(plan.cellName))
    return error("cell name " + quote(plan.cellName) + " is not an identifier");
  Status status;
  for (const std::string &dim : plan.dims)
    if (!(status = checkName("dimension", dim)).ok())
      return status;
  auto vectors = [&](const std::vector<VectorDecl> &decls,
                     const std::string &space) {
    Status status;
    for (const VectorDecl &decl : decls)
      if (!(status = checkName(space, decl.name)).ok() ||
          !(status = checkDim(decl.length, space + " " + quote(decl.name)))
               .ok())
        return status;
    return Status::success();
  };
  if (!(status = vectors(plan.inputs, "input")).ok() ||
      !(status = vectors(plan.states, "state")).ok() ||
      !(status = vectors(plan.probes, "probe")).ok() ||
      !(status = checkDim(plan.outputWidth, "the output")).ok())
    return status;
  for (const ParamDecl &param : plan.params)
    if (!(status = checkParam(param)).ok())
      return status;
  for (const BufferDecl &buffer : plan.buffers)
    if (!(status = checkName("buffer", buffer.name)).ok() ||
        !(status = checkDim(buffer.length, "buffer " + quote(buffer.name)))
             .ok())
      return status;
  for (const WeightDecl &weight : plan.weights)
    if (!(status = checkName("weight", weight.name)).ok() ||
        !(status = checkWeight(weight)).ok())
      return status;
  return checkScratch();
}

Status PlanValidator::checkWeight(const WeightDecl &weight) const {
  if (weight.params.empty())
    return error("weight " + quote(weight.name) + " stacks no param");
  const ParamDecl *first = nullptr;
  for (const std::string &name : weight.params) {
    const ParamDecl *param = plan.findParam(name);
    if (!param)
      return error("weight " + quote(weight.name) + " stacks unknown param " +
                   quote(name));
    if (!param->isMatrix())
      return error("weight " + quote(weight.name) + " stacks " + quote(name) +
                   ", which is not a matrix param");
    if (first && param->shape[1] != first->shape[1])
      return error("weight " + quote(weight.name) +
                   " stacks params with different COLS: " + quote(first->name) +
                   " has " + first->shape[1].str() + ", " + quote(name) +
                   " has " + param->shape[1].str());
    if (!first)
      first = param;
  }
  return Status::success();
}

Status PlanValidator::checkScratch() const {
  Status status;
  for (const auto &[kernel, lengths] : plan.scratch) {
    std::string where = "the scratch of kernel " + std::to_string(kernel);
    if (kernel < 0)
      return error("a scratch kernel index must not be negative, got " +
                   std::to_string(kernel));
    if (lengths.empty())
      return error(where + " has no length");
    for (const DimExpr &length : lengths)
      if (!(status = checkDim(length, where)).ok())
        return status;
  }
  return Status::success();
}

/// The operation's kind, phase and operand count fit together.
Status PlanValidator::checkForm(const Operation &op) const {
  using OK = Operation::Kind;
  bool end = op.phase == Phase::End;
  bool gradient = op.kind == OK::Wgrad || op.kind == OK::Pgrad;
  if (end != gradient)
    return opError(end ? "the end phase holds only wgrad and pgrad"
                       : "wgrad and pgrad run only in the end phase");
  if (op.phase == Phase::Scan && op.kind != OK::Kernel)
    return opError("'scan' takes only a kernel");
  size_t wanted = op.kind == OK::Pgrad ? 1 : 2;
  if (op.kind != OK::Kernel && op.operands.size() != wanted)
    return opError(std::string(op.kind == OK::Gemm    ? "gemm"
                               : op.kind == OK::Wgrad ? "wgrad"
                                                      : "pgrad") +
                   " takes " + std::to_string(wanted) + " operand" +
                   (wanted == 1 ? "" : "s") + ", got " +
                   std::to_string(op.operands.size()));
  if (op.kind == OK::Kernel && op.kernel < 0)
    return opError("kernel index must not be negative, got " +
                   std::to_string(op.kernel));
  return Status::success();
}

Status PlanValidator::checkRef(const Ref &ref) const {
  std::string what = quote(ref.str());
  bool nameless = ref.kind == K::Out || ref.kind == K::Dout;
  if (nameless != ref.name.empty())
    return opError(nameless
                       ? what + " takes no name"
                       : "a reference of kind " + quote(refKindName(ref.kind)) +
                             " needs a name");
  if (std::string problem = unknownDim(ref.column, what); !problem.empty())
    return opError(problem);
  switch (ref.kind) {
  case K::Input:
  case K::Dinput:
    if (!plan.findInput(ref.name))
      return opError("unknown input " + quote(ref.name) + " in " + what);
    break;
  case K::State:
  case K::Next:
  case K::Dnext:
  case K::Dstate:
    if (!plan.findState(ref.name))
      return opError("unknown state " + quote(ref.name) + " in " + what);
    break;
  case K::Param:
    if (!plan.findParam(ref.name))
      return opError("unknown param " + quote(ref.name) + " in " + what);
    break;
  case K::Seq:
  case K::Step: {
    const BufferDecl *buffer = plan.findBuffer(ref.name);
    if (!buffer)
      return opError("unknown buffer " + quote(ref.name) + " in " + what +
                     " (missing 'buffer " + refKindName(ref.kind) + " " +
                     ref.name + " LEN'?)");
    bool wantSeq = ref.kind == K::Seq;
    if ((buffer->extent == BufferDecl::Extent::Sequence) != wantSeq)
      return opError(what + " refers to a " + (wantSeq ? "step" : "seq") +
                     " buffer");
    break;
  }
  case K::Out:
    break;
  case K::Dout:
    if (plan.outputWidth == DimExpr())
      return opError("'dout' is used but the cell has no output "
                     "('output 0')");
    break;
  }
  return Status::success();
}

Status PlanValidator::allowed(const Ref &ref, std::initializer_list<K> kinds,
                              const std::string &role) const {
  if (std::find(kinds.begin(), kinds.end(), ref.kind) != kinds.end())
    return Status::success();
  std::string list;
  for (K kind : kinds)
    list += (list.empty() ? "" : ", ") + std::string(refKindName(kind));
  std::string directive = current->kind == Operation::Kind::Wgrad ? "wgrad"
                          : current->kind == Operation::Kind::Pgrad
                              ? "pgrad"
                              : phaseName(current->phase);
  return opError(directive + " " + role + " cannot be " + quote(ref.str()) +
                 " (allowed: " + list + ")");
}

Status PlanValidator::checkWidth(const Ref &ref, const DimExpr &needed,
                                 const std::string &role) const {
  DimExpr width = plan.arrayWidth(ref);
  if (!provablyNegative(width - ref.column - needed))
    return Status::success();
  return opError(role + " " + quote(ref.str()) + " needs " + needed.str() +
                 " columns from column " + ref.column.str() +
                 " but its array has " + width.str());
}

Status PlanValidator::checkOperation(const Operation &op) const {
  Status status;
  if (isBackward(op.phase))
    return checkBackwardOperation(op);
  bool pre = op.phase == Phase::Pre;
  if (op.kind == Operation::Kind::Gemm) {
    const WeightDecl *weight = plan.findWeight(op.weight);
    if (!weight)
      return opError("unknown weight " + quote(op.weight));
    if (pre) {
      if (!(status = allowed(op.gemmOutput(), {K::Seq}, "gemm output")).ok() ||
          !(status = allowed(op.gemmInput(), {K::Input, K::Seq}, "gemm input"))
               .ok())
        return status;
    } else if (!(status =
                     allowed(op.gemmOutput(),
                             {K::Seq, K::Step, K::Next, K::Out}, "gemm output"))
                    .ok() ||
               !(status =
                     allowed(op.gemmInput(),
                             {K::Input, K::State, K::Next, K::Seq, K::Step},
                             "gemm input"))
                    .ok()) {
      return status;
    }
    if (!(status = checkWidth(op.gemmOutput(), plan.weightRows(*weight),
                              "gemm output"))
             .ok())
      return status;
    return checkWidth(op.gemmInput(), plan.weightCols(*weight), "gemm input");
  }
  for (const Ref &ref : op.operands)
    if (!(status = pre ? allowed(ref, {K::Input, K::Seq, K::Param},
                                 "kernel argument")
                       : allowed(ref,
                                 {K::Input, K::State, K::Next, K::Param, K::Seq,
                                  K::Step, K::Out},
                                 "kernel argument"))
             .ok())
      return status;
  return Status::success();
}

Status PlanValidator::checkBackwardOperation(const Operation &op) const {
  Status status;
  // What every row of all T*B rows means (the state before each step).
  std::initializer_list<K> allRows = {K::Input, K::State, K::Seq, K::Step};

  switch (op.kind) {
  case Operation::Kind::Wgrad: {
    const WeightDecl *weight = plan.findWeight(op.weight);
    if (!weight)
      return opError("unknown weight " + quote(op.weight));
    if (!(status = allowed(op.wgradDy(), allRows, "DY")).ok() ||
        !(status = allowed(op.wgradX(), allRows, "X")).ok() ||
        !(status =
              checkWidth(op.wgradDy(), plan.weightRows(*weight), "wgrad DY"))
             .ok())
      return status;
    return checkWidth(op.wgradX(), plan.weightCols(*weight), "wgrad X");
  }
  case Operation::Kind::Pgrad: {
    const ParamDecl *param = plan.findParam(op.param);
    if (!param)
      return opError("unknown param " + quote(op.param));
    if (param->isMatrix())
      return opError("pgrad takes a vector param, but " + quote(op.param) +
                     " is a matrix (its gradient comes from wgrad)");
    if (!(status = allowed(op.operands[0], allRows, "operand")).ok())
      return status;
    return checkWidth(op.operands[0], param->shape[0], "pgrad operand");
  }
  case Operation::Kind::Gemm: {
    const WeightDecl *weight = plan.findWeight(op.weight);
    if (!weight)
      return opError("unknown weight " + quote(op.weight));
    if (op.phase == Phase::BStep) {
      if (!(status =
                allowed(op.gemmOutput(),
                        {K::Seq, K::Step, K::Dstate, K::Dinput}, "gemm output"))
               .ok() ||
          !(status = allowed(op.gemmInput(),
                             {K::Input, K::State, K::Next, K::Seq, K::Step,
                              K::Dnext, K::Dstate, K::Dout},
                             "gemm input"))
               .ok())
        return status;
    } else if (!(status = allowed(op.gemmOutput(), {K::Seq, K::Step, K::Dinput},
                                  "gemm output"))
                    .ok() ||
               !(status = allowed(op.gemmInput(), allRows, "gemm input"))
                    .ok()) {
      return status;
    }
    // Backward products run the other way: OUT[., C] += IN[., R] * W[R, C].
    if (!(status = checkWidth(op.gemmOutput(), plan.weightCols(*weight),
                              "gemm output"))
             .ok())
      return status;
    return checkWidth(op.gemmInput(), plan.weightRows(*weight), "gemm input");
  }
  case Operation::Kind::Kernel:
    for (const Ref &ref : op.operands)
      if (!(status = op.phase == Phase::BStep
                         ? allowed(ref,
                                   {K::Input, K::State, K::Next, K::Param,
                                    K::Seq, K::Step, K::Dnext, K::Dstate,
                                    K::Dout, K::Dinput},
                                   "kernel argument")
                         : allowed(ref,
                                   {K::Input, K::State, K::Param, K::Seq,
                                    K::Step, K::Dinput},
                                   "kernel argument"))
               .ok())
        return status;
    return Status::success();
  }
  return Status::success();
}

/// A `written` buffer is not zeroed: only backward kernels, which store,
/// may write it, and nothing in forward may use it. Notes the written
/// buffers a backward kernel refers to in `storedByKernels`.
Status PlanValidator::checkWrittenBuffers(
    const Operation &op, std::set<std::string> &storedByKernels) const {
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Ref &ref = op.operands[i];
    if (ref.kind != K::Seq && ref.kind != K::Step)
      continue;
    const BufferDecl *buffer = plan.findBuffer(ref.name);
    if (!buffer || !buffer->written)
      continue;
    if (!isBackward(op.phase))
      return opError("the written buffer " + quote(ref.name) +
                     " is used in forward");
    if (op.kind == Operation::Kind::Gemm && i == 0)
      return opError("a gemm adds to " + quote(ref.str()) +
                     ", but its buffer is written (not zeroed)");
    if (op.kind == Operation::Kind::Kernel)
      storedByKernels.insert(ref.name);
  }
  return Status::success();
}

Status PlanValidator::checkOperations() {
  Status status;
  bool outputWritten = false;
  std::set<std::string> storedByKernels;
  for (const Operation &op : plan.operations) {
    current = &op;
    if (!(status = checkForm(op)).ok())
      return status;
    for (const Ref &ref : op.operands)
      if (!(status = checkRef(ref)).ok())
        return status;
    if (!(status = checkOperation(op)).ok() ||
        !(status = checkWrittenBuffers(op, storedByKernels)).ok())
      return status;
    for (const Ref &ref : op.operands)
      outputWritten |= (op.phase == Phase::Step || op.phase == Phase::Scan) &&
                       ref.kind == K::Out;
  }
  for (const BufferDecl &buffer : plan.buffers)
    if (buffer.written && !storedByKernels.count(buffer.name))
      return error("the written buffer " + quote(buffer.name) +
                   " is not written by any backward kernel");
  // The runtime never computes or masks outputs itself.
  if (!outputWritten)
    return error("no step or scan operation writes the output ('out')");
  return Status::success();
}

Status PlanValidator::validate() {
  Status status = checkDeclarations();
  if (!status.ok())
    return status;
  return checkOperations();
}

Status cellrt::validatePlan(const Plan &plan) {
  return PlanValidator(plan).validate();
}
