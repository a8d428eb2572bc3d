//===- Plan.cpp - Parse, validate and print execution plans ---------------===//

#include "cellrt/Plan.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

using namespace cellrt;

//===----------------------------------------------------------------------===//
// Ref and Plan helpers
//===----------------------------------------------------------------------===//

static const char *refPrefix(Ref::Kind kind) {
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

static const char *phaseName(Phase phase) {
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
  std::string text = refPrefix(kind);
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

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {

/// Parses the plan line by line, then checks that every reference resolves.
class PlanParser {
public:
  Expected<Plan> parse(std::string_view text);

private:
  Status error(int line, const std::string &message) const {
    return Status::error("plan line " + std::to_string(line) + ": " + message);
  }
  Status parseLine(int line, const std::vector<std::string> &tokens);
  Status parseParam(int line, const std::vector<std::string> &tokens);
  Status parseName(int line, const std::string &token, std::string &name);
  Status parseDim(int line, const std::string &token, DimExpr &expr);
  Status parseRef(int line, const std::string &token, Ref &ref);
  Status declare(int line, const std::string &space, const std::string &name);
  Status checkRef(int line, const Ref &ref);
  Status checkOperation(const Operation &op);
  Status checkBackwardOperation(const Operation &op);
  Status checkWidth(const Operation &op, const Ref &ref, const DimExpr &needed,
                    const std::string &role);
  Status checkWrittenBuffers(const Operation &op,
                             std::set<std::string> &storedByKernels);
  Status checkWeight(int line, const WeightDecl &weight);
  Status validate();

  Plan plan;
  bool sawCell = false, sawDims = false, sawOutput = false,
       sawPrecision = false;
  std::vector<int> weightLines;
  /// First declaration line per (namespace, name).
  std::map<std::pair<std::string, std::string>, int> declared;
};

} // namespace

static bool isIdentifier(const std::string &text) {
  if (text.empty() ||
      !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_'))
    return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

static std::string quote(const std::string &text) { return "'" + text + "'"; }

Status PlanParser::parseName(int line, const std::string &token,
                             std::string &name) {
  if (!isIdentifier(token))
    return error(line, "expected a name, got " + quote(token));
  name = token;
  return Status::success();
}

Status PlanParser::parseDim(int line, const std::string &token, DimExpr &expr) {
  std::optional<DimExpr> parsed = DimExpr::parse(token);
  if (!parsed)
    return error(line, "malformed dimension expression " + quote(token));
  for (const DimExpr::Term &term : parsed->getTerms())
    if (std::find(plan.dims.begin(), plan.dims.end(), term.first) ==
        plan.dims.end())
      return error(line, "unknown dimension " + quote(term.first) + " in " +
                             quote(token) + " (declare it in 'dims' first)");
  expr = *parsed;
  return Status::success();
}

Status PlanParser::parseRef(int line, const std::string &token, Ref &ref) {
  static const std::pair<const char *, Ref::Kind> prefixes[] = {
      {"input", Ref::Kind::Input},  {"state", Ref::Kind::State},
      {"next", Ref::Kind::Next},    {"param", Ref::Kind::Param},
      {"seq", Ref::Kind::Seq},      {"step", Ref::Kind::Step},
      {"dnext", Ref::Kind::Dnext},  {"dstate", Ref::Kind::Dstate},
      {"dinput", Ref::Kind::Dinput}};
  auto isBare = [&](const std::string &word) {
    return token.rfind(word, 0) == 0 &&
           (token.size() == word.size() || token[word.size()] == '+');
  };
  size_t nameEnd;
  if (isBare("out") || isBare("dout")) {
    ref.kind = token[0] == 'd' ? Ref::Kind::Dout : Ref::Kind::Out;
    ref.name.clear();
    nameEnd = ref.kind == Ref::Kind::Out ? 3 : 4;
  } else {
    size_t colon = token.find(':');
    if (colon == std::string::npos)
      return error(line, "expected a reference like 'state:h' or 'out', got " +
                             quote(token));
    std::string prefix = token.substr(0, colon);
    auto it = std::find_if(std::begin(prefixes), std::end(prefixes),
                           [&](const auto &p) { return prefix == p.first; });
    if (it == std::end(prefixes))
      return error(line, "unknown reference kind " + quote(prefix) + " in " +
                             quote(token));
    ref.kind = it->second;
    nameEnd = token.find('+', colon);
    if (nameEnd == std::string::npos)
      nameEnd = token.size();
    ref.name = token.substr(colon + 1, nameEnd - colon - 1);
    if (!isIdentifier(ref.name))
      return error(line, "expected a name after " + quote(prefix + ":") +
                             " in " + quote(token));
  }
  ref.column = DimExpr();
  if (nameEnd == token.size())
    return Status::success();
  if (nameEnd + 1 == token.size())
    return error(line, "missing column offset after '+' in " + quote(token));
  return parseDim(line, token.substr(nameEnd + 1), ref.column);
}

Status PlanParser::declare(int line, const std::string &space,
                           const std::string &name) {
  auto [it, inserted] = declared.insert({{space, name}, line});
  if (!inserted)
    return error(line, space + " " + quote(name) +
                           " is declared twice (first "
                           "on line " +
                           std::to_string(it->second) + ")");
  return Status::success();
}

static std::string joinTokens(const std::vector<std::string> &tokens) {
  std::string text;
  for (const std::string &token : tokens)
    text += (text.empty() ? "" : " ") + token;
  return text;
}

/// `param NAME ROWS COLS` or `param NAME LEN`, either followed by the
/// cell's initialiser, `init KIND [VALUE]` (a plan without one reads as
/// before: the caller's fallback applies).
Status PlanParser::parseParam(int line,
                              const std::vector<std::string> &tokens) {
  // `init` follows one or two dims; a dim may itself be called `init`, but
  // a scheme's name never follows one in a line without an initialiser.
  auto init = tokens.end();
  if (tokens.size() > 4 && tokens[3] == "init" && parseInitKind(tokens[4]))
    init = tokens.begin() + 3;
  else if (tokens.size() > 5 && tokens[4] == "init")
    init = tokens.begin() + 4;
  size_t arity = static_cast<size_t>(init - tokens.begin()) - 1;
  if (arity != 2 && arity != 3)
    return error(line, "'param' takes NAME ROWS COLS or NAME LEN, then "
                       "optionally 'init KIND [VALUE]', got " +
                           quote(joinTokens(tokens)));
  ParamDecl decl;
  Status status;
  if (!(status = parseName(line, tokens[1], decl.name)).ok() ||
      !(status = declare(line, "param", decl.name)).ok())
    return status;
  for (auto token = tokens.begin() + 2; token != init; ++token) {
    decl.shape.emplace_back();
    if (!(status = parseDim(line, *token, decl.shape.back())).ok())
      return status;
  }
  if (init != tokens.end()) {
    std::vector<std::string> scheme(init + 1, tokens.end());
    std::optional<InitScheme> parsed = InitScheme::parse(joinTokens(scheme));
    if (!parsed || parsed->isNone())
      return error(line, "'init' takes constant C, uniform A, normal S, "
                         "orthogonal, fan_in or fan_out (C finite, A and S "
                         "positive), got " +
                             quote(joinTokens(scheme)));
    if (std::string problem = checkInitRank(*parsed, decl.shape.size());
        !problem.empty())
      return error(line, "param " + quote(decl.name) + ": " + problem);
    decl.init = *parsed;
  }
  plan.params.push_back(decl);
  return Status::success();
}

Status PlanParser::parseLine(int line, const std::vector<std::string> &tokens) {
  const std::string &directive = tokens[0];
  size_t arity = tokens.size() - 1;
  auto expectArity = [&](size_t count, const char *usage) {
    if (arity == count)
      return Status::success();
    return error(line, quote(directive) + " takes " + std::to_string(count) +
                           " operand" + (count == 1 ? "" : "s") + " (" + usage +
                           "), got " + quote(joinTokens(tokens)));
  };
  Status status;

  if (directive == "cellc-plan")
    return error(line, "'cellc-plan' may only appear on the first line");

  if (directive == "cell") {
    if (sawCell)
      return error(line, "'cell' appears twice");
    sawCell = true;
    if (!(status = expectArity(1, "cell NAME")).ok())
      return status;
    return parseName(line, tokens[1], plan.cellName);
  }

  if (directive == "precision") {
    if (sawPrecision)
      return error(line, "'precision' appears twice");
    sawPrecision = true;
    if (!(status = expectArity(1, "precision f32|bf16")).ok())
      return status;
    std::optional<Precision> precision = parsePrecision(tokens[1]);
    if (!precision)
      return error(line,
                   "'precision' takes f32 or bf16, got " + quote(tokens[1]));
    plan.precision = *precision;
    return Status::success();
  }

  if (directive == "dims") {
    if (sawDims)
      return error(line, "'dims' appears twice");
    sawDims = true;
    for (size_t i = 1; i < tokens.size(); ++i) {
      std::string name;
      if (!(status = parseName(line, tokens[i], name)).ok() ||
          !(status = declare(line, "dimension", name)).ok())
        return status;
      plan.dims.push_back(name);
    }
    return Status::success();
  }

  if (directive == "input" || directive == "state") {
    VectorDecl decl;
    bool input = directive == "input";
    if (input && arity == 3 && tokens[3] == "written") {
      decl.gradientWritten = true;
      arity = 2;
    }
    if (!(status = expectArity(2, input ? "input NAME LEN [written]"
                                        : "state NAME LEN"))
             .ok() ||
        !(status = parseName(line, tokens[1], decl.name)).ok() ||
        !(status = declare(line, directive, decl.name)).ok() ||
        !(status = parseDim(line, tokens[2], decl.length)).ok())
      return status;
    (directive == "input" ? plan.inputs : plan.states).push_back(decl);
    return Status::success();
  }

  if (directive == "param")
    return parseParam(line, tokens);

  if (directive == "probe") {
    VectorDecl decl;
    if (!sawOutput)
      return error(line, "'probe' must follow 'output'");
    // A state's new value is probed by its primed name (`h'`).
    std::string base = tokens.size() > 1 ? tokens[1] : "";
    if (!base.empty() && base.back() == '\'')
      base.pop_back();
    if (!(status = expectArity(2, "probe NAME LEN")).ok() ||
        !(status = parseName(line, base, decl.name)).ok())
      return status;
    decl.name = tokens[1];
    if (!(status = declare(line, "probe", decl.name)).ok() ||
        !(status = parseDim(line, tokens[2], decl.length)).ok())
      return status;
    plan.probes.push_back(decl);
    return Status::success();
  }

  if (directive == "output") {
    if (sawOutput)
      return error(line, "'output' appears twice");
    sawOutput = true;
    if (!(status = expectArity(1, "output LEN")).ok())
      return status;
    return parseDim(line, tokens[1], plan.outputWidth);
  }

  if (directive == "buffer") {
    BufferDecl decl;
    if (arity == 4 && tokens[4] == "written") {
      decl.written = true;
      arity = 3;
    }
    if (!(status = expectArity(3, "buffer seq|step NAME LEN [written]")).ok())
      return status;
    if (tokens[1] == "seq")
      decl.extent = BufferDecl::Extent::Sequence;
    else if (tokens[1] == "step")
      decl.extent = BufferDecl::Extent::Step;
    else
      return error(line, "buffer extent must be 'seq' or 'step', got " +
                             quote(tokens[1]));
    if (!(status = parseName(line, tokens[2], decl.name)).ok() ||
        !(status = declare(line, "buffer", decl.name)).ok() ||
        !(status = parseDim(line, tokens[3], decl.length)).ok())
      return status;
    plan.buffers.push_back(decl);
    return Status::success();
  }

  if (directive == "weight") {
    if (arity < 2)
      return error(line, "'weight' takes a name and at least one param, got " +
                             quote(joinTokens(tokens)));
    WeightDecl decl;
    if (!(status = parseName(line, tokens[1], decl.name)).ok() ||
        !(status = declare(line, "weight", decl.name)).ok())
      return status;
    for (size_t i = 2; i < tokens.size(); ++i) {
      decl.params.emplace_back();
      if (!(status = parseName(line, tokens[i], decl.params.back())).ok())
        return status;
    }
    plan.weights.push_back(decl);
    weightLines.push_back(line);
    return Status::success();
  }

  if (directive == "scratch") {
    // Kernels get their row-local scratch from the device.
    if (arity < 2)
      return error(line, "'scratch' takes a kernel index and lengths, got " +
                             quote(joinTokens(tokens)));
    const std::string &index = tokens[1];
    if (index.empty() || index.size() > 9 ||
        !std::all_of(index.begin(), index.end(),
                     [](char c) { return std::isdigit(c); }))
      return error(line, "scratch kernel index must be a non-negative "
                         "integer, got " + quote(index));
    std::vector<DimExpr> &lengths = plan.scratch[std::stoll(index)];
    for (size_t i = 2; i < tokens.size(); ++i) {
      lengths.emplace_back();
      if (!(status = parseDim(line, tokens[i], lengths.back())).ok())
        return status;
    }
    return Status::success();
  }

  if (directive == "wgrad" || directive == "pgrad") {
    Operation op;
    op.phase = Phase::End;
    op.line = line;
    bool weight = directive == "wgrad";
    op.kind = weight ? Operation::Kind::Wgrad : Operation::Kind::Pgrad;
    if (!(status = expectArity(weight ? 3 : 2, weight ? "wgrad WEIGHT DY X"
                                                      : "pgrad PARAM REF"))
             .ok() ||
        !(status = parseName(line, tokens[1], weight ? op.weight : op.param))
             .ok())
      return status;
    op.operands.resize(tokens.size() - 2);
    for (size_t i = 2; i < tokens.size(); ++i)
      if (!(status = parseRef(line, tokens[i], op.operands[i - 2])).ok())
        return status;
    plan.operations.push_back(op);
    return Status::success();
  }

  if (directive == "pre" || directive == "step" || directive == "bpre" ||
      directive == "bstep" || directive == "scan") {
    Operation op;
    op.phase = directive == "pre"    ? Phase::Pre
               : directive == "step" ? Phase::Step
               : directive == "scan" ? Phase::Scan
               : directive == "bpre" ? Phase::BPre
                                     : Phase::BStep;
    if (op.phase == Phase::Scan && (arity < 1 || tokens[1] != "kernel"))
      return error(line, "'scan' takes only 'kernel K ARGS...'");
    op.line = line;
    if (arity < 1)
      return error(line, quote(directive) + " needs 'gemm' or 'kernel'");
    if (tokens[1] == "gemm") {
      op.kind = Operation::Kind::Gemm;
      if (arity != 4)
        return error(line, "gemm takes OUT WEIGHT IN, got " +
                               quote(joinTokens(tokens)));
      op.operands.resize(2);
      if (!(status = parseRef(line, tokens[2], op.operands[0])).ok() ||
          !(status = parseName(line, tokens[3], op.weight)).ok() ||
          !(status = parseRef(line, tokens[4], op.operands[1])).ok())
        return status;
    } else if (tokens[1] == "kernel") {
      op.kind = Operation::Kind::Kernel;
      if (arity < 2)
        return error(line, "kernel needs an index");
      const std::string &index = tokens[2];
      if (index.empty() || index.size() > 9 ||
          !std::all_of(index.begin(), index.end(),
                       [](char c) { return std::isdigit(c); }))
        return error(line, "kernel index must be a non-negative integer, got " +
                               quote(index));
      op.kernel = std::stoll(index);
      for (size_t i = 3; i < tokens.size(); ++i) {
        op.operands.emplace_back();
        if (!(status = parseRef(line, tokens[i], op.operands.back())).ok())
          return status;
      }
    } else {
      return error(line, "expected 'gemm' or 'kernel' after " +
                             quote(directive) + ", got " + quote(tokens[1]));
    }
    plan.operations.push_back(op);
    return Status::success();
  }

  return error(line, "unknown directive " + quote(directive));
}

Status PlanParser::checkRef(int line, const Ref &ref) {
  std::string what = quote(ref.str());
  switch (ref.kind) {
  case Ref::Kind::Input:
  case Ref::Kind::Dinput:
    if (!plan.findInput(ref.name))
      return error(line, "unknown input " + quote(ref.name) + " in " + what);
    break;
  case Ref::Kind::State:
  case Ref::Kind::Next:
  case Ref::Kind::Dnext:
  case Ref::Kind::Dstate:
    if (!plan.findState(ref.name))
      return error(line, "unknown state " + quote(ref.name) + " in " + what);
    break;
  case Ref::Kind::Param:
    if (!plan.findParam(ref.name))
      return error(line, "unknown param " + quote(ref.name) + " in " + what);
    break;
  case Ref::Kind::Seq:
  case Ref::Kind::Step: {
    const BufferDecl *buffer = plan.findBuffer(ref.name);
    if (!buffer)
      return error(line, "unknown buffer " + quote(ref.name) + " in " + what +
                             " (missing 'buffer " + refPrefix(ref.kind) + " " +
                             ref.name + " LEN'?)");
    bool wantSeq = ref.kind == Ref::Kind::Seq;
    if ((buffer->extent == BufferDecl::Extent::Sequence) != wantSeq)
      return error(line, what + " refers to a " + (wantSeq ? "step" : "seq") +
                             " buffer");
    break;
  }
  case Ref::Kind::Out:
    break;
  case Ref::Kind::Dout:
    if (plan.outputWidth == DimExpr())
      return error(line, "'dout' is used but the cell has no output "
                         "('output 0')");
    break;
  }
  return Status::success();
}

/// True when `expr` is negative for every positive value of its dims.
static bool provablyNegative(const DimExpr &expr) {
  // With all coefficients <= 0 the largest value is at every dim = 1.
  int64_t largest = expr.getConstant();
  for (const DimExpr::Term &term : expr.getTerms()) {
    if (term.second > 0)
      return false;
    largest += term.second;
  }
  return largest < 0;
}

Status PlanParser::checkWidth(const Operation &op, const Ref &ref,
                              const DimExpr &needed, const std::string &role) {
  DimExpr width = plan.arrayWidth(ref);
  if (!provablyNegative(width - ref.column - needed))
    return Status::success();
  return error(op.line, role + " " + quote(ref.str()) + " needs " +
                            needed.str() + " columns from column " +
                            ref.column.str() + " but its array has " +
                            width.str());
}

Status PlanParser::checkOperation(const Operation &op) {
  Status status;
  for (const Ref &ref : op.operands)
    if (!(status = checkRef(op.line, ref)).ok())
      return status;
  if (isBackward(op.phase))
    return checkBackwardOperation(op);
  using K = Ref::Kind;
  auto allowed = [&](const Ref &ref, std::initializer_list<K> kinds,
                     const std::string &role) {
    if (std::find(kinds.begin(), kinds.end(), ref.kind) != kinds.end())
      return Status::success();
    std::string list;
    for (K kind : kinds)
      list += (list.empty() ? "" : ", ") + std::string(refPrefix(kind));
    return error(op.line, std::string(phaseName(op.phase)) + " " + role +
                              " cannot be " + quote(ref.str()) +
                              " (allowed: " + list + ")");
  };
  bool pre = op.phase == Phase::Pre;
  if (op.kind == Operation::Kind::Gemm) {
    const WeightDecl *weight = plan.findWeight(op.weight);
    if (!weight)
      return error(op.line, "unknown weight " + quote(op.weight));
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
    if (!(status = checkWidth(op, op.gemmOutput(), plan.weightRows(*weight),
                              "gemm output"))
             .ok())
      return status;
    return checkWidth(op, op.gemmInput(), plan.weightCols(*weight),
                      "gemm input");
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

Status PlanParser::checkBackwardOperation(const Operation &op) {
  Status status;
  using K = Ref::Kind;
  const char *directive = op.kind == Operation::Kind::Wgrad   ? "wgrad"
                          : op.kind == Operation::Kind::Pgrad ? "pgrad"
                                                              : nullptr;
  auto allowed = [&](const Ref &ref, std::initializer_list<K> kinds,
                     const std::string &role) {
    if (std::find(kinds.begin(), kinds.end(), ref.kind) != kinds.end())
      return Status::success();
    std::string list;
    for (K kind : kinds)
      list += (list.empty() ? "" : ", ") + std::string(refPrefix(kind));
    return error(op.line, (directive ? std::string(directive)
                                     : std::string(phaseName(op.phase))) +
                              " " + role + " cannot be " + quote(ref.str()) +
                              " (allowed: " + list + ")");
  };
  // What every row of all T*B rows means (the state before each step).
  std::initializer_list<K> allRows = {K::Input, K::State, K::Seq, K::Step};

  switch (op.kind) {
  case Operation::Kind::Wgrad: {
    const WeightDecl *weight = plan.findWeight(op.weight);
    if (!weight)
      return error(op.line, "unknown weight " + quote(op.weight));
    if (!(status = allowed(op.wgradDy(), allRows, "DY")).ok() ||
        !(status = allowed(op.wgradX(), allRows, "X")).ok() ||
        !(status = checkWidth(op, op.wgradDy(), plan.weightRows(*weight),
                              "wgrad DY"))
             .ok())
      return status;
    return checkWidth(op, op.wgradX(), plan.weightCols(*weight), "wgrad X");
  }
  case Operation::Kind::Pgrad: {
    const ParamDecl *param = plan.findParam(op.param);
    if (!param)
      return error(op.line, "unknown param " + quote(op.param));
    if (param->isMatrix())
      return error(op.line, "pgrad takes a vector param, but " +
                                quote(op.param) +
                                " is a matrix (its gradient comes from wgrad)");
    if (!(status = allowed(op.operands[0], allRows, "operand")).ok())
      return status;
    return checkWidth(op, op.operands[0], param->shape[0], "pgrad operand");
  }
  case Operation::Kind::Gemm: {
    const WeightDecl *weight = plan.findWeight(op.weight);
    if (!weight)
      return error(op.line, "unknown weight " + quote(op.weight));
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
    if (!(status = checkWidth(op, op.gemmOutput(), plan.weightCols(*weight),
                              "gemm output"))
             .ok())
      return status;
    return checkWidth(op, op.gemmInput(), plan.weightRows(*weight),
                      "gemm input");
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
Status PlanParser::checkWrittenBuffers(const Operation &op,
                                       std::set<std::string> &storedByKernels) {
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Ref &ref = op.operands[i];
    if (ref.kind != Ref::Kind::Seq && ref.kind != Ref::Kind::Step)
      continue;
    const BufferDecl *buffer = plan.findBuffer(ref.name);
    if (!buffer || !buffer->written)
      continue;
    if (!isBackward(op.phase))
      return error(op.line, "the written buffer " + quote(ref.name) +
                                " is used in forward");
    if (op.kind == Operation::Kind::Gemm && i == 0)
      return error(op.line, "a gemm adds to " + quote(ref.str()) +
                                ", but its buffer is written (not zeroed)");
    if (op.kind == Operation::Kind::Kernel)
      storedByKernels.insert(ref.name);
  }
  return Status::success();
}

Status PlanParser::checkWeight(int line, const WeightDecl &weight) {
  const ParamDecl *first = nullptr;
  for (const std::string &name : weight.params) {
    const ParamDecl *param = plan.findParam(name);
    if (!param)
      return error(line, "weight " + quote(weight.name) +
                             " stacks unknown param " + quote(name));
    if (!param->isMatrix())
      return error(line, "weight " + quote(weight.name) + " stacks " +
                             quote(name) + ", which is not a matrix param");
    if (first && param->shape[1] != first->shape[1])
      return error(line, "weight " + quote(weight.name) +
                             " stacks params with different COLS: " +
                             quote(first->name) + " has " +
                             first->shape[1].str() + ", " + quote(name) +
                             " has " + param->shape[1].str());
    if (!first)
      first = param;
  }
  return Status::success();
}

Status PlanParser::validate() {
  if (!sawCell)
    return Status::error("plan: missing 'cell NAME'");
  if (!sawDims)
    return Status::error("plan: missing 'dims' (write 'dims' alone if the "
                         "cell has no symbolic dimensions)");
  if (!sawOutput)
    return Status::error("plan: missing 'output LEN'");
  Status status;
  for (size_t i = 0; i < plan.weights.size(); ++i)
    if (!(status = checkWeight(weightLines[i], plan.weights[i])).ok())
      return status;
  bool outputWritten = false;
  std::set<std::string> storedByKernels;
  for (const Operation &op : plan.operations) {
    if (!(status = checkOperation(op)).ok() ||
        !(status = checkWrittenBuffers(op, storedByKernels)).ok())
      return status;
    for (const Ref &ref : op.operands)
      outputWritten |= (op.phase == Phase::Step || op.phase == Phase::Scan) &&
                       ref.kind == Ref::Kind::Out;
  }
  for (const BufferDecl &buffer : plan.buffers)
    if (buffer.written && !storedByKernels.count(buffer.name))
      return Status::error("plan: the written buffer " + quote(buffer.name) +
                           " is not written by any backward kernel");
  // The runtime never computes or masks outputs itself.
  if (!outputWritten)
    return Status::error(
        "plan: no step or scan operation writes the output ('out')");
  return Status::success();
}

Expected<Plan> PlanParser::parse(std::string_view text) {
  int line = 0;
  size_t pos = 0;
  bool sawHeader = false;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos)
      end = text.size();
    std::string content(text.substr(pos, end - pos));
    pos = end + 1;
    ++line;
    if (!content.empty() && content.back() == '\r')
      content.pop_back();
    if (content.empty())
      continue;

    std::vector<std::string> tokens;
    size_t start = 0;
    while (true) {
      size_t space = content.find(' ', start);
      tokens.push_back(content.substr(start, space - start));
      if (tokens.back().empty())
        return error(line, "tokens must be separated by single spaces");
      if (space == std::string::npos)
        break;
      start = space + 1;
    }

    if (!sawHeader) {
      if (tokens[0] != "cellc-plan")
        return error(line, "expected 'cellc-plan 1' as the first line, got " +
                               quote(content));
      if (tokens.size() != 2 || tokens[1] != "1")
        return error(line, "unsupported plan version " + quote(content) +
                               " (this runtime reads 'cellc-plan 1')");
      sawHeader = true;
      continue;
    }
    Status status = parseLine(line, tokens);
    if (!status.ok())
      return status;
  }
  if (!sawHeader)
    return Status::error("plan: empty (expected 'cellc-plan 1')");
  Status status = validate();
  if (!status.ok())
    return status;
  return std::move(plan);
}

Expected<Plan> cellrt::parsePlan(std::string_view text) {
  return PlanParser().parse(text);
}

//===----------------------------------------------------------------------===//
// Printer
//===----------------------------------------------------------------------===//

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
    out += std::string("buffer ") +
           (buffer.extent == BufferDecl::Extent::Sequence ? "seq " : "step ") +
           buffer.name + " " + buffer.length.str() +
           (buffer.written ? " written\n" : "\n");
  for (const WeightDecl &weight : plan.weights) {
    out += "weight " + weight.name;
    for (const std::string &param : weight.params)
      out += " " + param;
    out += "\n";
  }
  for (const Operation &op : plan.operations) {
    if (op.kind == Operation::Kind::Wgrad) {
      out += "wgrad " + op.weight + " " + op.wgradDy().str() + " " +
             op.wgradX().str() + "\n";
      continue;
    }
    if (op.kind == Operation::Kind::Pgrad) {
      out += "pgrad " + op.param + " " + op.operands[0].str() + "\n";
      continue;
    }
    out += phaseName(op.phase);
    if (op.kind == Operation::Kind::Gemm) {
      out += " gemm " + op.gemmOutput().str() + " " + op.weight + " " +
             op.gemmInput().str();
    } else {
      out += " kernel " + std::to_string(op.kernel);
      for (const Ref &ref : op.operands)
        out += " " + ref.str();
    }
    out += "\n";
  }
  for (const auto &[kernel, lengths] : plan.scratch) {
    out += "scratch " + std::to_string(kernel);
    for (const DimExpr &length : lengths)
      out += " " + length.str();
    out += "\n";
  }
  return out;
}
