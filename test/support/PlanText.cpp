//===- PlanText.cpp - Plans written as text, for tests
//---------------------===//
//
// The runtime reads only the tables an object carries; tests write the
// plans of their hand-written kernels in the text form cellc -emit=plan
// prints (docs/plan-format.md). This reader checks the syntax; the rules are
// cellrt::validatePlan's.
//
//===----------------------------------------------------------------------===//

#include "test/support/PlanText.h"

#include "cellrt/PlanTables.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>

using namespace cellrt;

namespace {

/// Reads the text line by line; the rules are validatePlan's.
class PlanTextReader {
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
  Status parseOperation(int line, const std::vector<std::string> &tokens);
  Status checkArity(int line, const std::vector<std::string> &tokens,
                    size_t arity, size_t count, const char *usage) const;

  Plan plan;
  bool sawCell = false, sawDims = false, sawOutput = false,
       sawPrecision = false;
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

/// The case of an enum whose text name is `name` (cellrt's names of the
/// plan's enums, listed once in schedule/PlanEnums.td).
template <typename Enum>
static std::optional<Enum> enumNamed(const std::string &name, int count) {
  for (int value = 0; value < count; ++value) {
    Enum candidate = static_cast<Enum>(value);
    const char *text;
    if constexpr (std::is_same_v<Enum, Phase>)
      text = phaseName(candidate);
    else if constexpr (std::is_same_v<Enum, Ref::Kind>)
      text = refKindName(candidate);
    else
      text = bufferExtentName(candidate);
    if (name == text)
      return candidate;
  }
  return std::nullopt;
}

static std::string quote(const std::string &text) { return "'" + text + "'"; }

Status PlanTextReader::parseName(int line, const std::string &token,
                                 std::string &name) {
  if (!isIdentifier(token))
    return error(line, "expected a name, got " + quote(token));
  name = token;
  return Status::success();
}

Status PlanTextReader::parseDim(int line, const std::string &token,
                                DimExpr &expr) {
  std::optional<DimExpr> parsed = DimExpr::parse(token);
  if (!parsed)
    return error(line, "malformed dimension expression " + quote(token));
  expr = *parsed;
  return Status::success();
}

Status PlanTextReader::parseRef(int line, const std::string &token, Ref &ref) {
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
    std::optional<Ref::Kind> kind = enumNamed<Ref::Kind>(prefix, kNumRefKinds);
    if (!kind || *kind == Ref::Kind::Out || *kind == Ref::Kind::Dout)
      return error(line, "unknown reference kind " + quote(prefix) + " in " +
                             quote(token));
    ref.kind = *kind;
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

static std::string joinTokens(const std::vector<std::string> &tokens) {
  std::string text;
  for (const std::string &token : tokens)
    text += (text.empty() ? "" : " ") + token;
  return text;
}

/// `param NAME ROWS COLS` or `param NAME LEN`, either followed by the
/// cell's initialiser, `init KIND [VALUE]` (a plan without one reads as
/// before: the caller's fallback applies).
Status PlanTextReader::parseParam(int line,
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
  if (!(status = parseName(line, tokens[1], decl.name)).ok())
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
    decl.init = *parsed;
  }
  plan.params.push_back(decl);
  return Status::success();
}

/// Success when the line (of `arity` operands, its flags not counted) has
/// `count` operands, else the error with the directive's usage.
Status PlanTextReader::checkArity(int line,
                                  const std::vector<std::string> &tokens,
                                  size_t arity, size_t count,
                                  const char *usage) const {
  if (arity == count)
    return Status::success();
  return error(line, quote(tokens[0]) + " takes " + std::to_string(count) +
                         " operand" + (count == 1 ? "" : "s") + " (" + usage +
                         "), got " + quote(joinTokens(tokens)));
}

Status PlanTextReader::parseLine(int line,
                                 const std::vector<std::string> &tokens) {
  const std::string &directive = tokens[0];
  size_t arity = tokens.size() - 1;
  auto expectArity = [&](size_t count, const char *usage) {
    return checkArity(line, tokens, arity, count, usage);
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
      if (!(status = parseName(line, tokens[i], name)).ok())
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
    if (!(status = parseDim(line, tokens[2], decl.length)).ok())
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
    std::optional<BufferDecl::Extent> extent =
        enumNamed<BufferDecl::Extent>(tokens[1], kNumBufferExtents);
    if (!extent)
      return error(line, "buffer extent must be 'seq' or 'step', got " +
                             quote(tokens[1]));
    decl.extent = *extent;
    if (!(status = parseName(line, tokens[2], decl.name)).ok() ||
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
    if (!(status = parseName(line, tokens[1], decl.name)).ok())
      return status;
    for (size_t i = 2; i < tokens.size(); ++i) {
      decl.params.emplace_back();
      if (!(status = parseName(line, tokens[i], decl.params.back())).ok())
        return status;
    }
    plan.weights.push_back(decl);
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
                         "integer, got " +
                             quote(index));
    std::vector<DimExpr> &lengths = plan.scratch[std::stoll(index)];
    for (size_t i = 2; i < tokens.size(); ++i) {
      lengths.emplace_back();
      if (!(status = parseDim(line, tokens[i], lengths.back())).ok())
        return status;
    }
    return Status::success();
  }

  std::optional<Phase> phase = enumNamed<Phase>(directive, kNumPhases);
  if (directive == "wgrad" || directive == "pgrad" ||
      (phase && *phase != Phase::End))
    return parseOperation(line, tokens);

  return error(line, "unknown directive " + quote(directive));
}

/// `wgrad`, `pgrad`, or a phase followed by `gemm` or `kernel`.
Status PlanTextReader::parseOperation(int line,
                                      const std::vector<std::string> &tokens) {
  const std::string &directive = tokens[0];
  size_t arity = tokens.size() - 1;
  auto expectArity = [&](size_t count, const char *usage) {
    return checkArity(line, tokens, arity, count, usage);
  };
  Status status;
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

  {
    Operation op;
    op.phase = *enumNamed<Phase>(directive, kNumPhases);
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
}

Expected<Plan> PlanTextReader::parse(std::string_view text) {
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
  if (!sawCell)
    return Status::error("plan: missing 'cell NAME'");
  if (!sawDims)
    return Status::error("plan: missing 'dims' (write 'dims' alone if the "
                         "cell has no symbolic dimensions)");
  if (!sawOutput)
    return Status::error("plan: missing 'output LEN'");
  Status status = validatePlan(plan);
  if (!status.ok())
    return status;
  return std::move(plan);
}

Expected<Plan> cellc_test::readPlanText(std::string_view text) {
  return PlanTextReader().parse(text);
}

const char *cellc_test::planTables(const char *text) {
  // Images hold a pointer: keep each text's tables for the whole run.
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<std::string>> tables;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<std::string> &encoded = tables[text];
  if (!encoded) {
    Expected<Plan> plan = readPlanText(text);
    if (!plan) {
      std::fprintf(stderr, "planTables: %s\n", plan.error().c_str());
      std::abort();
    }
    encoded = std::make_unique<std::string>(encodePlan(*plan));
  }
  return encoded->data();
}
