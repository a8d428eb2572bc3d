//===- Sema.cpp - Names, states and shapes of .cell files -----------------===//
//
// Checks each cell in one pass over its statements: every name is defined
// once and before use, every state gets exactly one next value, `@` has a
// matrix param on its left, and shapes agree. Symbolic dimensions unify
// across the whole cell (SRU's `(1-r)*x` makes I = H); only contradictions
// such as `3*H` vs `H` or `4` vs `5` are errors. Every error is reported, and
// a value whose shape is unknown because of an error does not cause more.
//
//===----------------------------------------------------------------------===//

#include "frontend/AST.h"
#include "frontend/DimUnifier.h"
#include "ir/CellOps.h"
#include "frontend/Frontend.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Casting.h"

#include <cfloat>
#include <cmath>
#include <optional>
#include <set>

using namespace cellc;
using namespace cellc::ast;
using llvm::dyn_cast;

namespace {

//===----------------------------------------------------------------------===//
// Cell checker
//===----------------------------------------------------------------------===//

/// Functions built into the language itself; element-wise functions of one
/// argument are the ops that declare themselves LanguageFunction.
const char *const otherFunctions[] = {"layernorm", "concat", "split"};

/// A value visible by name: a declaration, a statement's result, or a
/// state's next value (under the key `h'`).
struct NamedValue {
  enum class Kind { Input, State, Param, Local, Next };
  Kind kind;
  Shape shape;
  Location loc;
  bool used = false;
  /// Computed from params and numbers alone: the same at every step.
  bool stepInvariant = false;
  /// A scalar's value: every scalar is a number, folded at compile time.
  std::optional<double> number;
};

const char *describeKind(NamedValue::Kind kind) {
  switch (kind) {
  case NamedValue::Kind::Input:
    return "an input";
  case NamedValue::Kind::State:
    return "a state";
  case NamedValue::Kind::Param:
    return "a param";
  case NamedValue::Kind::Local:
    return "a value";
  case NamedValue::Kind::Next:
    return "a next state";
  }
  return "a value";
}

class CellChecker {
public:
  CellChecker(mlir::MLIRContext &context, const std::string &fileName,
              Cell &cell, const std::map<std::string, int64_t> &fixedDims)
      : context(context), fileName(fileName), cell(cell), dims(fixedDims) {}

  /// Checks the cell, records shapes in it; false if an error was reported.
  bool check();

private:
  // Declarations and statements.
  void declare(Decl &decl);
  Shape checkDeclaredShape(const Decl &decl);
  // A param's initialiser (`= 1`, `~ uniform(0.05)`): its scheme, its
  // arguments, and that it suits the param's shape.
  void checkInit(const Decl &decl, Init &init);
  void checkConstantInit(const Decl &decl, Init &init);
  void checkDrawnInit(const Decl &decl, Init &init);
  /// Reports an argument that is not a finite float32; false if it was.
  bool checkInitNumber(const InitNumber &number, const std::string &what);
  /// Reports a declared dimension that can be non-positive or is too large
  /// (as written or under `--dim`); false if it was reported.
  bool checkDeclaredDim(const Decl &decl, const DimExpr &dim);
  void checkStmt(Stmt &stmt);
  void checkSplit(Stmt &stmt, CallExpr &call);
  void define(Target &target, const Shape &shape, bool stepInvariant,
              std::optional<double> number = std::nullopt);
  void checkOutputs();
  void checkStatesAndParams();

  // Expressions.
  Shape checkExpr(Expr &expr);
  Shape checkName(NameExpr &name);
  Shape checkBinary(BinaryExpr &binary);
  Shape checkMatVec(MatVecExpr &matVec);
  Shape checkCall(CallExpr &call);
  Shape checkLayerNorm(CallExpr &call);
  Shape checkConcat(CallExpr &call);
  /// Whether `expr` reads only params and numbers (no input or state).
  bool isStepInvariant(const Expr &expr) const;
  // Numbers: scalar expressions fold at compile time (MLIRGen folds them the
  // same way), so a constant that float32 cannot hold is reported here, at
  // its text, rather than compiled into kernels that compute with inf.
  void foldNumber(const Expr &expr);
  std::optional<double> evaluateNumber(const Expr &expr) const;
  std::optional<double> numberOf(const Expr &expr) const;
  /// `exp(1000)`, `1e+30 * 1e+30`: a folded operation on its operands.
  std::string describeFolding(const Expr &expr) const;
  /// Checks that `expr` names a vector param of length `length`.
  void checkVectorParam(Expr &expr, const DimExpr &length, const char *role);

  // Results.
  void resolveShapes();
  void resolveExpr(Expr &expr);
  Shape resolve(const Shape &shape) const;

  // Diagnostics.
  mlir::Location toLoc(Location loc) {
    return mlir::FileLineColLoc::get(&context, fileName, loc.line, loc.col);
  }
  mlir::InFlightDiagnostic error(Location loc) {
    failed = true;
    return mlir::emitError(toLoc(loc));
  }
  void redefinition(const std::string &name, Location loc, Location previous);
  /// ` (that is, [4] vs [5])` when unification or `--dim` makes the shapes
  /// read differently from how they were written, else "".
  std::string unifiedSuffix(const Shape &a, const Shape &b) const;
  /// dims.unify(a, b), warning at `loc` when it makes a dimension the user
  /// named equal to another (`a * v` with `[H]` and `[I]`).
  bool unifyAt(const DimExpr &a, const DimExpr &b, Location loc);
  /// `; did you mean 'x'?` for the closest candidate, or "".
  static std::string suggest(llvm::StringRef name,
                             llvm::ArrayRef<std::string> candidates);
  std::vector<std::string> valueNames() const;

  mlir::MLIRContext &context;
  const std::string &fileName;
  Cell &cell;
  DimUnifier dims;
  std::map<std::string, NamedValue> values;
  /// Names a later statement defines: using one now is "used before".
  std::map<std::string, Location> laterDefinitions;
  bool failed = false;
  bool reportedTooLarge = false;
  /// `--dim` symbols whose value was reported out of range.
  std::set<std::string> reportedFixedDims;
  /// The value of every scalar expression that folded to a finite float32;
  /// one that did not is reported once, and its users are not.
  llvm::DenseMap<const Expr *, double> numbers;
};

bool CellChecker::check() {
  if (cell.inputs.empty())
    error(cell.loc) << "cell '" << cell.name << "' has no inputs";
  if (cell.states.empty())
    error(cell.loc) << "cell '" << cell.name << "' has no state";
  for (std::vector<Decl> *decls : {&cell.inputs, &cell.states, &cell.params})
    for (Decl &decl : *decls)
      for (const DimExpr &dim : decl.declared.dims)
        for (const DimExpr::Term &term : dim.getTerms())
          dims.noteSymbol(term.first);
  for (std::vector<Decl> *decls : {&cell.inputs, &cell.states, &cell.params})
    for (Decl &decl : *decls)
      declare(decl);

  for (const Stmt &stmt : cell.stmts)
    for (const Target &target : stmt.targets)
      if (!target.primed)
        laterDefinitions.emplace(target.name, target.loc);
  for (Stmt &stmt : cell.stmts)
    checkStmt(stmt);

  checkOutputs();
  checkStatesAndParams();
  resolveShapes();
  return !failed;
}

void CellChecker::redefinition(const std::string &name, Location loc,
                               Location previous) {
  mlir::InFlightDiagnostic diag = error(loc);
  diag << "'" << name << "' is already defined";
  diag.attachNote(toLoc(previous))
      << "previous definition of '" << name << "' is here";
}

void CellChecker::declare(Decl &decl) {
  decl.shape = checkDeclaredShape(decl);
  if (decl.init)
    checkInit(decl, *decl.init);
  auto it = values.find(decl.name);
  if (it != values.end()) {
    redefinition(decl.name, decl.loc, it->second.loc);
    return;
  }
  NamedValue::Kind kind =
      decl.role == Decl::Role::Input   ? NamedValue::Kind::Input
      : decl.role == Decl::Role::State ? NamedValue::Kind::State
                                       : NamedValue::Kind::Param;
  values[decl.name] = {kind, decl.shape, decl.loc};
  values[decl.name].stepInvariant = kind == NamedValue::Kind::Param;
}

Shape CellChecker::checkDeclaredShape(const Decl &decl) {
  const std::vector<DimExpr> &declared = decl.declared.dims;
  bool valid = true;
  for (const DimExpr &dim : declared)
    valid &= checkDeclaredDim(decl, dim);
  if (declared.size() == 2 && decl.role == Decl::Role::Param)
    return valid ? Shape::matrix(declared[0], declared[1]) : Shape::invalid();
  if (declared.size() != 1) {
    const char *role = decl.role == Decl::Role::Input   ? "input"
                       : decl.role == Decl::Role::State ? "state"
                                                        : "param";
    mlir::InFlightDiagnostic diag = error(decl.declared.loc);
    diag << role << " '" << decl.name << "' must be a vector [D]";
    if (decl.role == Decl::Role::Param)
      diag << " or a matrix [R, C]";
    diag << ", not a shape with " << declared.size() << " dimensions";
    return Shape::invalid();
  }
  return valid ? Shape::vector(declared[0]) : Shape::invalid();
}

//===----------------------------------------------------------------------===//
// Initialisers
//===----------------------------------------------------------------------===//

/// `uniform(A), normal(S), orthogonal, fan_in and fan_out`.
std::string describeSchemes() {
  std::string text;
  std::vector<std::string> names = cellrt::drawnInitKindNames();
  for (size_t i = 0; i < names.size(); ++i) {
    text += i == 0 ? "" : i + 1 == names.size() ? " and " : ", ";
    text += names[i];
    if (names[i] == "uniform")
      text += "(A)";
    else if (names[i] == "normal")
      text += "(S)";
  }
  return text;
}

/// What a scheme's one argument is, with an example.
std::string describeArgument(cellrt::InitScheme::Kind kind) {
  if (kind == cellrt::InitScheme::Kind::Uniform)
    return "the bound A of U(-A, A), as in 'uniform(0.1)'";
  return "the standard deviation S of N(0, S^2), as in 'normal(0.02)'";
}

void CellChecker::checkInit(const Decl &decl, Init &init) {
  if (init.drawn)
    checkDrawnInit(decl, init);
  else
    checkConstantInit(decl, init);
}

bool CellChecker::checkInitNumber(const InitNumber &number,
                                  const std::string &what) {
  if (std::isfinite(number.value) && std::fabs(number.value) <= FLT_MAX)
    return true;
  error(number.loc) << what << " is not a finite float32: '" << number.spelling
                    << "'";
  return false;
}

void CellChecker::checkConstantInit(const Decl &decl, Init &init) {
  if (!init.scheme.empty()) {
    mlir::InFlightDiagnostic diag = error(init.schemeLoc);
    diag << "'=' gives '" << decl.name << "' a constant value, a number";
    if (auto kind = cellrt::parseInitKind(init.scheme);
        kind && *kind != cellrt::InitScheme::Kind::None &&
        *kind != cellrt::InitScheme::Kind::Constant)
      diag << "; to draw it from '" << init.scheme << "', write '~ "
           << init.scheme << "'";
    return;
  }
  if (checkInitNumber(init.args[0], "the initial value of '" + decl.name + "'"))
    init.checked = cellrt::InitScheme::constant(init.args[0].value);
}

void CellChecker::checkDrawnInit(const Decl &decl, Init &init) {
  using Kind = cellrt::InitScheme::Kind;
  if (init.scheme.empty()) {
    error(init.args[0].loc)
        << "'~' draws '" << decl.name
        << "' from a scheme: " << describeSchemes()
        << "; write '= " << init.args[0].spelling << "' for a constant";
    return;
  }
  std::optional<Kind> kind = cellrt::parseInitKind(init.scheme);
  if (kind == Kind::Constant) {
    error(init.schemeLoc) << "write a constant as '= C', not '~ constant'";
    return;
  }
  if (!kind || kind == Kind::None) {
    error(init.schemeLoc) << "unknown initialiser '" << init.scheme
                          << "' (the schemes are " << describeSchemes() << ")"
                          << suggest(init.scheme, cellrt::drawnInitKindNames());
    return;
  }
  bool takesValue = cellrt::initKindTakesValue(*kind);
  if (takesValue && init.args.empty()) {
    error(init.schemeLoc) << "'" << init.scheme << "' takes one argument, "
                          << describeArgument(*kind);
    return;
  }
  if (takesValue && init.args.size() > 1) {
    error(init.args[1].loc) << "'" << init.scheme
                            << "' takes one argument, got " << init.args.size();
    return;
  }
  if (!takesValue && !init.args.empty()) {
    error(init.args[0].loc) << "'" << init.scheme << "' takes no argument";
    return;
  }
  cellrt::InitScheme scheme{*kind, takesValue ? init.args[0].value : 0};
  if (takesValue) {
    std::string what = std::string("the ") + cellrt::initValueRole(*kind) +
                       " of '" + init.scheme + "'";
    if (!checkInitNumber(init.args[0], what))
      return;
    if (std::string problem = cellrt::checkInitValue(scheme);
        !problem.empty()) {
      error(init.args[0].loc) << problem;
      return;
    }
  }
  if (!decl.shape.isInvalid())
    if (std::string problem =
            cellrt::checkInitRank(scheme, decl.shape.isMatrix() ? 2 : 1);
        !problem.empty()) {
      error(init.schemeLoc)
          << problem << ": '" << decl.name << "' is " << decl.shape.str();
      return;
    }
  init.checked = scheme;
}

using mlir::cell::valueAtOnes;
static_assert(limits::kMaxDimension == mlir::cell::kMaxDimension,
              "the front end and the dialect accept the same dimensions");

bool hasNegativeTerm(const DimExpr &dim) {
  return llvm::any_of(dim.getTerms(),
                      [](const DimExpr::Term &t) { return t.second < 0; });
}

bool CellChecker::checkDeclaredDim(const Decl &decl, const DimExpr &dim) {
  auto report = [&]() -> mlir::InFlightDiagnostic {
    mlir::InFlightDiagnostic diag = error(decl.declared.loc);
    diag << "dimension '" << dim.str() << "' of '" << decl.name << "' ";
    return diag;
  };
  const char *symbols =
      dim.getTerms().size() == 1 ? "its symbol" : "its symbols";
  // The rules the dialect's types verify; said here in the cell's terms.
  switch (mlir::cell::findDimensionProblem(dim)) {
  case mlir::cell::DimensionProblem::None:
    break;
  case mlir::cell::DimensionProblem::NeverPositive:
    report() << "is not positive";
    return false;
  case mlir::cell::DimensionProblem::NotPositiveForAllSizes:
    // Every symbol is at least 1: `1 - H` is 0 at H = 1, `H - 1` too.
    if (hasNegativeTerm(dim))
      report() << "is not positive for every size of " << symbols
               << "; write it as a sum of positive terms";
    else
      report() << "is not positive for every size of " << symbols << ": it is "
               << valueAtOnes(dim) << " when every symbol is 1";
    return false;
  case mlir::cell::DimensionProblem::TooLarge:
    report() << "is too large: a dimension has at most "
             << limits::kMaxDimension << " elements";
    return false;
  }
  // --dim values: the fixed sizes must give a dimension in range too.
  auto inRange = [](const DimExpr &value) {
    return !value.isConstant() ||
           (value.getConstant() >= 1 &&
            value.getConstant() <= limits::kMaxDimension);
  };
  DimExpr fixed = dims.resolve(dim);
  if (fixed != dim && !inRange(fixed)) {
    // A --dim value out of range is reported once, at its first use.
    for (const DimExpr::Term &term : dim.getTerms())
      if (!inRange(dims.resolve(DimExpr::symbol(term.first))) &&
          !reportedFixedDims.insert(term.first).second)
        return false;
    mlir::InFlightDiagnostic diag = report();
    diag << "is ";
    if (fixed.getConstant() > limits::kMaxDimension)
      diag << "larger than " << limits::kMaxDimension;
    else
      diag << fixed.getConstant();
    diag << " with";
    for (const DimExpr::Term &term : dim.getTerms())
      if (auto value = dims.resolve(DimExpr::symbol(term.first));
          value.isConstant())
        diag << " --dim " << term.first << "=" << value.getConstant();
    diag << "; a dimension has 1 to " << limits::kMaxDimension << " elements";
    return false;
  }
  return true;
}

void CellChecker::checkStmt(Stmt &stmt) {
  if (auto *call = dyn_cast<CallExpr>(stmt.value.get());
      call && call->callee == "split") {
    checkSplit(stmt, *call);
  } else {
    Shape shape = checkExpr(*stmt.value);
    if (stmt.targets.size() != 1) {
      error(stmt.targets[1].loc)
          << stmt.targets.size() << " names on the left need 'split(e, "
          << stmt.targets.size() << ")' on the right";
      shape = Shape::invalid();
    }
    bool invariant = isStepInvariant(*stmt.value);
    for (Target &target : stmt.targets)
      define(target, shape, invariant, numberOf(*stmt.value));
  }
}

void CellChecker::checkSplit(Stmt &stmt, CallExpr &call) {
  size_t parts = stmt.targets.size();
  for (auto &arg : call.args)
    checkExpr(*arg);
  Shape part = Shape::invalid();
  auto *count = call.args.size() == 2 ? dyn_cast<NumberExpr>(call.args[1].get())
                                      : nullptr;
  if (call.args.size() != 2) {
    error(call.loc) << "'split' takes 2 arguments (a vector and a count), got "
                    << call.args.size();
  } else if (!count || !count->isInteger() || count->value < 1 ||
             count->value > 1e6) {
    mlir::InFlightDiagnostic diag = error(call.args[1]->loc);
    diag << "the count of 'split' must be a positive integer literal";
    // `3.0` reads as a count but is a float literal: say what to write.
    if (count && count->value == std::floor(count->value) &&
        count->value >= 1 && count->value <= 1e6)
      diag << ", as in 'split(e, " << static_cast<int64_t>(count->value)
           << ")', not '" << count->spelling << "'";
  } else if (static_cast<size_t>(count->value) != parts) {
    error(call.loc) << "'split' into " << static_cast<int64_t>(count->value)
                    << " parts needs " << static_cast<int64_t>(count->value)
                    << " names on the left, got " << parts;
  } else {
    const Shape &whole = call.args[0]->shape;
    if (whole.isScalar() || whole.isMatrix())
      error(call.args[0]->loc) << "'split' needs a vector, got "
                               << (whole.isScalar() ? "a scalar" : "a matrix");
    if (whole.isVector()) {
      int64_t n = static_cast<int64_t>(count->value);
      DimExpr length = dims.resolve(whole.dims[0]);
      if (std::optional<DimExpr> exact = length.divideExactly(n)) {
        part = Shape::vector(*exact);
      } else if (!length.isConstant()) {
        // `split(e, 3)` of a `[D]` vector: D = 3*D_div3.
        std::string base =
            length.getTerms().front().first + "_div" + std::to_string(n);
        DimExpr fresh = DimExpr::symbol(dims.freshSymbol(base));
        if (dims.unify(length, fresh * n))
          part = Shape::vector(fresh);
      }
      if (part.isInvalid())
        error(call.loc) << "cannot split " << whole.str() << " into " << n
                        << " equal parts";
    }
  }
  call.shape = Shape::invalid();
  bool invariant = !call.args.empty() && isStepInvariant(*call.args[0]);
  for (Target &target : stmt.targets)
    define(target, part, invariant);
}

void CellChecker::define(Target &target, const Shape &shape, bool stepInvariant,
                         std::optional<double> number) {
  target.shape = shape;
  if (!target.primed) {
    laterDefinitions.erase(target.name);
    auto it = values.find(target.name);
    if (it != values.end()) {
      redefinition(target.name, target.loc, it->second.loc);
      return;
    }
    values[target.name] = {NamedValue::Kind::Local, shape, target.loc};
    values[target.name].stepInvariant = stepInvariant;
    values[target.name].number = number;
    return;
  }

  auto state = values.find(target.name);
  if (state == values.end() || state->second.kind != NamedValue::Kind::State) {
    mlir::InFlightDiagnostic diag = error(target.loc);
    diag << "'" << target.spelling() << "' is the next value of no state";
    if (state != values.end())
      diag << ": '" << target.name << "' is "
           << describeKind(state->second.kind);
    else
      diag << suggest(target.name, valueNames());
    return;
  }
  std::string spelling = target.spelling();
  auto previous = values.find(spelling);
  if (previous != values.end()) {
    mlir::InFlightDiagnostic diag = error(target.loc);
    diag << "state '" << target.name << "' has two next values";
    diag.attachNote(toLoc(previous->second.loc))
        << "first next value of '" << target.name << "' is here";
    return;
  }
  const Shape &stateShape = state->second.shape;
  if (shape.isVector() && stateShape.isVector() &&
      !unifyAt(stateShape.dims[0], shape.dims[0], target.loc))
    error(target.loc) << "shape mismatch: state '" << target.name << "' is "
                      << stateShape.str() << " but its next value is "
                      << shape.str() << unifiedSuffix(stateShape, shape);
  values[spelling] = {NamedValue::Kind::Next, stateShape, target.loc};
  target.shape = stateShape;
}

void CellChecker::checkOutputs() {
  for (size_t i = 0; i < cell.outputs.size(); ++i) {
    Output &output = cell.outputs[i];
    if (i == 1) {
      mlir::InFlightDiagnostic diag = error(output.loc);
      diag << "cell '" << cell.name << "' has more than one output";
      diag.attachNote(toLoc(cell.outputs[0].loc)) << "first output is here";
    }
    std::string spelling = output.target.spelling();
    auto it = values.find(spelling);
    if (it == values.end()) {
      error(output.target.loc) << "output names unknown value '" << spelling
                               << "'" << suggest(spelling, valueNames());
      continue;
    }
    it->second.used = true;
    output.target.shape = it->second.shape;
    if (it->second.shape.isMatrix() || it->second.shape.isScalar())
      error(output.target.loc)
          << "output must be a vector, but '" << spelling << "' is a "
          << (it->second.shape.isMatrix() ? "matrix" : "scalar");
  }
}

void CellChecker::checkStatesAndParams() {
  for (const Decl &state : cell.states)
    if (!values.count(state.name + "'"))
      error(state.loc) << "state '" << state.name
                       << "' has no next value (add \"" << state.name
                       << "' = ...\")";
  for (const Decl &param : cell.params) {
    auto it = values.find(param.name);
    // A param whose declaration was reported is not reported again.
    if (it != values.end() && it->second.kind == NamedValue::Kind::Param &&
        it->second.loc.line == param.loc.line &&
        it->second.loc.col == param.loc.col && !it->second.used &&
        !it->second.shape.isInvalid())
      mlir::emitWarning(toLoc(param.loc))
          << "param '" << param.name << "' is never used";
  }
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

Shape CellChecker::checkExpr(Expr &expr) {
  Shape shape;
  switch (expr.kind) {
  case Expr::Kind::Number:
    shape = Shape::scalar();
    break;
  case Expr::Kind::Name:
    shape = checkName(llvm::cast<NameExpr>(expr));
    break;
  case Expr::Kind::Unary:
    shape = checkExpr(*llvm::cast<UnaryExpr>(expr).operand);
    break;
  case Expr::Kind::Binary:
    shape = checkBinary(llvm::cast<BinaryExpr>(expr));
    break;
  case Expr::Kind::MatVec:
    shape = checkMatVec(llvm::cast<MatVecExpr>(expr));
    break;
  case Expr::Kind::Call:
    shape = checkCall(llvm::cast<CallExpr>(expr));
    break;
  }
  expr.shape = shape;
  if (shape.isScalar())
    foldNumber(expr);
  return shape;
}

bool CellChecker::isStepInvariant(const Expr &expr) const {
  switch (expr.kind) {
  case Expr::Kind::Number:
    return true;
  case Expr::Kind::Name: {
    auto it = values.find(llvm::cast<NameExpr>(expr).spelling());
    return it != values.end() && it->second.stepInvariant;
  }
  case Expr::Kind::Unary:
    return isStepInvariant(*llvm::cast<UnaryExpr>(expr).operand);
  case Expr::Kind::Binary: {
    const auto &binary = llvm::cast<BinaryExpr>(expr);
    return isStepInvariant(*binary.lhs) && isStepInvariant(*binary.rhs);
  }
  case Expr::Kind::MatVec:
    return isStepInvariant(*llvm::cast<MatVecExpr>(expr).vector);
  case Expr::Kind::Call:
    return llvm::all_of(llvm::cast<CallExpr>(expr).args,
                        [&](const auto &arg) { return isStepInvariant(*arg); });
  }
  return false;
}

std::optional<double> CellChecker::numberOf(const Expr &expr) const {
  auto it = numbers.find(&expr);
  if (it == numbers.end())
    return std::nullopt;
  return it->second;
}

void CellChecker::foldNumber(const Expr &expr) {
  std::optional<double> value = evaluateNumber(expr);
  if (!value)
    return;
  if (mlir::cell::isFiniteFloat32(*value)) {
    numbers[&expr] = *value;
    return;
  }
  if (const auto *number = dyn_cast<NumberExpr>(&expr)) {
    error(expr.loc) << "number '" << number->spelling
                    << "' is too large for float32 (at most "
                    << mlir::cell::formatNumber(FLT_MAX) << ")";
    return;
  }
  error(expr.loc) << "the constant " << describeFolding(expr) << " is "
                  << mlir::cell::formatNumber(
                         std::isnan(*value) ? *value
                                            : std::copysign(INFINITY, *value))
                  << " in float32; a constant must be finite";
}

/// The value of a scalar expression from its operands' folded values;
/// std::nullopt when an operand did not fold (it was reported).
std::optional<double> CellChecker::evaluateNumber(const Expr &expr) const {
  switch (expr.kind) {
  case Expr::Kind::Number:
    return llvm::cast<NumberExpr>(expr).value;
  case Expr::Kind::Name: {
    auto it = values.find(llvm::cast<NameExpr>(expr).spelling());
    return it == values.end() ? std::nullopt : it->second.number;
  }
  case Expr::Kind::Unary:
    if (auto operand = numberOf(*llvm::cast<UnaryExpr>(expr).operand))
      return -*operand;
    return std::nullopt;
  case Expr::Kind::Binary: {
    const auto &binary = llvm::cast<BinaryExpr>(expr);
    std::optional<double> lhs = numberOf(*binary.lhs);
    std::optional<double> rhs = numberOf(*binary.rhs);
    // Division by zero was reported by checkBinary.
    if (!lhs || !rhs || (binary.op == '/' && *rhs == 0))
      return std::nullopt;
    switch (binary.op) {
    case '+':
      return *lhs + *rhs;
    case '-':
      return *lhs - *rhs;
    case '*':
      return *lhs * *rhs;
    default:
      return *lhs / *rhs;
    }
  }
  case Expr::Kind::Call: {
    const auto &call = llvm::cast<CallExpr>(expr);
    auto function = mlir::cell::lookupLanguageFunction(context, call.callee);
    std::optional<double> operand =
        call.args.size() == 1 ? numberOf(*call.args[0]) : std::nullopt;
    if (!function || !operand)
      return std::nullopt;
    return function->getInterface<mlir::cell::ElementwiseMath>()->evaluate(
        {*operand});
  }
  case Expr::Kind::MatVec:
    return std::nullopt;
  }
  return std::nullopt;
}

std::string CellChecker::describeFolding(const Expr &expr) const {
  auto operand = [&](const Expr &e) {
    return mlir::cell::formatNumber(numberOf(e).value_or(NAN));
  };
  if (const auto *binary = dyn_cast<BinaryExpr>(&expr))
    return operand(*binary->lhs) + " " + binary->op + " " +
           operand(*binary->rhs);
  if (const auto *call = dyn_cast<CallExpr>(&expr))
    return call->callee + "(" + operand(*call->args[0]) + ")";
  return "expression";
}

Shape CellChecker::checkName(NameExpr &name) {
  std::string spelling = name.spelling();
  auto it = values.find(spelling);
  if (it != values.end()) {
    it->second.used = true;
    if (it->second.shape.isMatrix()) {
      error(name.loc) << "matrix param '" << spelling
                      << "' can only be the left side of '@'";
      return Shape::invalid();
    }
    return it->second.shape;
  }

  if (name.primed) {
    auto state = values.find(name.name);
    if (state != values.end() && state->second.kind == NamedValue::Kind::State)
      error(name.loc) << "'" << spelling << "' is read before it is assigned";
    else
      error(name.loc) << "'" << spelling << "' is the next value of no state";
    return Shape::invalid();
  }
  auto later = laterDefinitions.find(name.name);
  if (later != laterDefinitions.end()) {
    mlir::InFlightDiagnostic diag = error(name.loc);
    diag << "'" << spelling << "' is used before its definition";
    diag.attachNote(toLoc(later->second))
        << "'" << spelling << "' is defined here";
    return Shape::invalid();
  }
  error(name.loc) << "unknown name '" << spelling << "'"
                  << suggest(spelling, valueNames());
  return Shape::invalid();
}

Shape CellChecker::checkBinary(BinaryExpr &binary) {
  Shape lhs = checkExpr(*binary.lhs);
  Shape rhs = checkExpr(*binary.rhs);
  if (lhs.isInvalid() || rhs.isInvalid())
    return Shape::invalid();
  // Every element of the quotient would be inf or NaN; reported here for a
  // vector or a number alike (evaluateNumber leaves it unfolded).
  if (binary.op == '/' && numberOf(*binary.rhs) == 0.0)
    error(binary.loc) << "division by zero: the divisor is the constant 0";
  if (lhs.isScalar())
    return rhs;
  if (rhs.isScalar())
    return lhs;
  if (!unifyAt(lhs.dims[0], rhs.dims[0], binary.loc)) {
    error(binary.loc) << "shape mismatch: " << lhs.str() << " vs " << rhs.str()
                      << unifiedSuffix(lhs, rhs);
    return Shape::invalid();
  }
  return lhs;
}

Shape CellChecker::checkMatVec(MatVecExpr &matVec) {
  Shape matrix = Shape::invalid();
  auto *name = dyn_cast<NameExpr>(matVec.matrix.get());
  auto it = name ? values.find(name->spelling()) : values.end();
  if (it != values.end() && it->second.kind == NamedValue::Kind::Param &&
      it->second.shape.isMatrix()) {
    it->second.used = true;
    matrix = it->second.shape;
    name->shape = matrix;
  } else if (it != values.end() && it->second.shape.isInvalid()) {
    // Its declaration was reported.
    it->second.used = true;
  } else if (it != values.end()) {
    const NamedValue &value = it->second;
    error(matVec.matrix->loc)
        << "left side of '@' must be a matrix param, but '" << name->spelling()
        << "' is "
        << (value.kind == NamedValue::Kind::Param ? "a vector param"
                                                  : describeKind(value.kind));
    name->shape = value.shape;
  } else {
    // checkExpr reports unknown names; anything else is not a matrix param.
    checkExpr(*matVec.matrix);
    if (!name)
      error(matVec.matrix->loc) << "left side of '@' must be a matrix param";
  }

  Shape vector = checkExpr(*matVec.vector);
  if (vector.isScalar()) {
    error(matVec.vector->loc) << "right side of '@' must be a vector, not a "
                                 "scalar";
    return Shape::invalid();
  }
  // The runtime multiplies a matrix by a batch of rows (an input's or a
  // step's values); a product of params alone has no rows.
  if (vector.isVector() && isStepInvariant(*matVec.vector)) {
    error(matVec.vector->loc)
        << "right side of '@' must depend on an input or a state; a product "
           "of params and numbers alone is the same at every step (learn it "
           "as one param instead)";
    return Shape::invalid();
  }
  if (matrix.isInvalid() || vector.isInvalid())
    return matrix.isInvalid() ? Shape::invalid()
                              : Shape::vector(matrix.dims[0]);
  if (!unifyAt(matrix.dims[1], vector.dims[0], matVec.loc)) {
    error(matVec.loc) << "shape mismatch: '" << name->spelling() << "' is "
                      << matrix.str() << " but its operand is " << vector.str()
                      << unifiedSuffix(matrix, vector);
    return Shape::invalid();
  }
  return Shape::vector(matrix.dims[0]);
}

Shape CellChecker::checkCall(CallExpr &call) {
  if (call.callee == "layernorm")
    return checkLayerNorm(call);
  if (call.callee == "concat")
    return checkConcat(call);
  if (call.callee == "split") {
    for (auto &arg : call.args)
      checkExpr(*arg);
    error(call.loc) << "'split' must be the whole right side of a statement, "
                       "as in 'a, b = split(e, 2)'";
    return Shape::invalid();
  }

  std::vector<Shape> args;
  for (auto &arg : call.args)
    args.push_back(checkExpr(*arg));
  if (!mlir::cell::lookupLanguageFunction(context, call.callee)) {
    std::vector<std::string> known =
        mlir::cell::languageFunctionNames(context);
    known.insert(known.end(), std::begin(otherFunctions),
                 std::end(otherFunctions));
    error(call.loc) << "unknown function '" << call.callee << "'"
                    << suggest(call.callee, known);
    return Shape::invalid();
  }
  if (args.size() != 1) {
    error(call.loc) << "'" << call.callee << "' takes 1 argument, got "
                    << args.size();
    return Shape::invalid();
  }
  return args[0];
}

Shape CellChecker::checkLayerNorm(CallExpr &call) {
  if (call.args.empty()) {
    error(call.loc) << "'layernorm' takes 1 or 3 arguments (e, gain, bias), "
                       "got 0";
    return Shape::invalid();
  }
  Shape operand = checkExpr(*call.args[0]);
  if (operand.isScalar()) {
    error(call.args[0]->loc) << "'layernorm' needs a vector, not a scalar";
    operand = Shape::invalid();
  }
  if (call.args.size() != 1 && call.args.size() != 3) {
    for (size_t i = 1; i < call.args.size(); ++i)
      checkExpr(*call.args[i]);
    error(call.loc) << "'layernorm' takes 1 or 3 arguments (e, gain, bias), "
                       "got "
                    << call.args.size();
    return Shape::invalid();
  }
  if (call.args.size() == 3) {
    DimExpr length = operand.isVector() ? operand.dims[0] : DimExpr();
    checkVectorParam(*call.args[1], length, "gain");
    checkVectorParam(*call.args[2], length, "bias");
  }
  return operand;
}

void CellChecker::checkVectorParam(Expr &expr, const DimExpr &length,
                                   const char *role) {
  Shape shape = checkExpr(expr);
  auto *name = dyn_cast<NameExpr>(&expr);
  auto it = name ? values.find(name->spelling()) : values.end();
  if (shape.isInvalid())
    return;
  if (it == values.end() || it->second.kind != NamedValue::Kind::Param ||
      !shape.isVector()) {
    error(expr.loc) << "the " << role
                    << " of 'layernorm' must be a vector param";
    return;
  }
  if (length != DimExpr() && !unifyAt(length, shape.dims[0], expr.loc))
    error(expr.loc) << "shape mismatch: the " << role << " '"
                    << name->spelling() << "' is " << shape.str()
                    << " but the normalised vector is [" << length.str() << "]";
}

Shape CellChecker::checkConcat(CallExpr &call) {
  DimExpr total;
  bool valid = true;
  for (size_t i = 0; i < call.args.size(); ++i) {
    Shape arg = checkExpr(*call.args[i]);
    if (arg.isScalar())
      error(call.args[i]->loc)
          << "'concat' joins vectors, but argument " << i + 1 << " is a scalar";
    if (!arg.isVector())
      valid = false;
    else
      total = total + arg.dims[0];
  }
  if (call.args.size() < 2) {
    error(call.loc) << "'concat' takes at least 2 arguments, got "
                    << call.args.size();
    return Shape::invalid();
  }
  return valid ? Shape::vector(total) : Shape::invalid();
}

//===----------------------------------------------------------------------===//
// Results and helpers
//===----------------------------------------------------------------------===//

Shape CellChecker::resolve(const Shape &shape) const {
  Shape resolved = shape;
  for (DimExpr &dim : resolved.dims)
    dim = dims.resolve(dim);
  return resolved;
}

void CellChecker::resolveExpr(Expr &expr) {
  if (auto *unary = dyn_cast<UnaryExpr>(&expr)) {
    resolveExpr(*unary->operand);
  } else if (auto *binary = dyn_cast<BinaryExpr>(&expr)) {
    resolveExpr(*binary->lhs);
    resolveExpr(*binary->rhs);
  } else if (auto *matVec = dyn_cast<MatVecExpr>(&expr)) {
    resolveExpr(*matVec->matrix);
    resolveExpr(*matVec->vector);
  } else if (auto *call = dyn_cast<CallExpr>(&expr)) {
    for (auto &arg : call->args)
      resolveExpr(*arg);
  }
  // After the operands, so that the innermost oversized value is reported
  // (`concat` of long vectors), once.
  expr.shape = resolve(expr.shape);
  if (!reportedTooLarge && expr.shape.isVector() &&
      valueAtOnes(expr.shape.dims[0]) > limits::kMaxDimension) {
    reportedTooLarge = true;
    error(expr.loc) << "this vector is too large: " << expr.shape.str()
                    << " has more than " << limits::kMaxDimension
                    << " elements";
  }
}

void CellChecker::resolveShapes() {
  for (std::vector<Decl> *decls : {&cell.inputs, &cell.states, &cell.params})
    for (Decl &decl : *decls)
      decl.shape = resolve(decl.shape);
  for (Stmt &stmt : cell.stmts) {
    for (Target &target : stmt.targets)
      target.shape = resolve(target.shape);
    resolveExpr(*stmt.value);
  }
  for (Output &output : cell.outputs)
    output.target.shape = resolve(output.target.shape);
  cell.dimBindings.assign(dims.bindings.begin(), dims.bindings.end());
}

bool CellChecker::unifyAt(const DimExpr &a, const DimExpr &b, Location loc) {
  if (!dims.unify(a, b))
    return false;
  if (const auto &eliminated = dims.lastEliminatedUserDim()) {
    const auto &[name, value] = *eliminated;
    mlir::InFlightDiagnostic warning = mlir::emitWarning(toLoc(loc));
    warning << (value.isConstant() ? "this expression fixes dimension '"
                                   : "this expression makes dimension '")
            << name << (value.isConstant() ? "' to " : "' equal to '")
            << value.str()
            << (value.isConstant() ? "" : "' everywhere in the cell") << " ("
            << a.str() << " vs " << b.str() << "); "
            << (value.isConstant()
                    ? "declare it as " + value.str() + " if that is meant"
                    : "write one name if they are meant to be the same size");
  }
  return true;
}

std::string CellChecker::unifiedSuffix(const Shape &a, const Shape &b) const {
  Shape resolvedA = resolve(a), resolvedB = resolve(b);
  if (resolvedA.str() == a.str() && resolvedB.str() == b.str())
    return "";
  return " (that is, " + resolvedA.str() + " vs " + resolvedB.str() + ")";
}

std::string CellChecker::suggest(llvm::StringRef name,
                                 llvm::ArrayRef<std::string> candidates) {
  std::string best;
  unsigned bestDistance = name.size() <= 3 ? 1 : 2;
  for (const std::string &candidate : candidates) {
    unsigned distance = name.edit_distance(candidate, true, bestDistance + 1);
    if (distance <= bestDistance && distance > 0 && distance < name.size() &&
        (best.empty() || distance < bestDistance)) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

std::vector<std::string> CellChecker::valueNames() const {
  std::vector<std::string> names;
  for (const auto &entry : values)
    names.push_back(entry.first);
  return names;
}

} // namespace

namespace {

/// A `--dim NAME=N` (or Python's dims) that no cell of the file declares is
/// a mistyped name: it would be ignored, and the dimension the user meant
/// left free.
bool checkFixedDimsAreUsed(const Module &module, mlir::MLIRContext &context,
                           const std::map<std::string, int64_t> &fixedDims) {
  std::set<std::string> declared;
  for (const Cell &cell : module.cells)
    for (const std::vector<Decl> *decls :
         {&cell.inputs, &cell.states, &cell.params})
      for (const Decl &decl : *decls)
        for (const DimExpr &dim : decl.declared.dims)
          for (const DimExpr::Term &term : dim.getTerms())
            declared.insert(term.first);
  bool success = true;
  for (const auto &[name, value] : fixedDims) {
    if (declared.count(name))
      continue;
    std::string known;
    for (const std::string &symbol : declared)
      known += (known.empty() ? "" : ", ") + symbol;
    mlir::emitError(mlir::FileLineColLoc::get(&context, module.fileName, 1, 1))
        << "--dim " << name << "=" << value
        << ": no cell in this file has a dimension '" << name
        << "' (its dimensions: " << (known.empty() ? "none" : known) << ")";
    success = false;
  }
  return success;
}

} // namespace

bool cellc::checkCellFile(ParsedFile &file, mlir::MLIRContext &context,
                          const std::map<std::string, int64_t> &fixedDims) {
  if (!file.module)
    return false;
  Module &module = *file.module;
  if (module.cells.empty()) {
    // An empty (or comment-only) file would compile to an object without a
    // cell, which nothing can load.
    mlir::emitError(mlir::FileLineColLoc::get(&context, module.fileName, 1, 1))
        << "the file defines no cell";
    module.checked = false;
    return false;
  }
  bool success = true;
  std::map<std::string, Location> cellNames;
  for (Cell &cell : module.cells) {
    auto [previous, inserted] = cellNames.emplace(cell.name, cell.loc);
    if (!inserted) {
      mlir::InFlightDiagnostic diag = mlir::emitError(mlir::FileLineColLoc::get(
          &context, module.fileName, cell.loc.line, cell.loc.col));
      diag << "cell '" << cell.name << "' is already defined";
      diag.attachNote(mlir::FileLineColLoc::get(&context, module.fileName,
                                                previous->second.line,
                                                previous->second.col))
          << "previous definition of '" << cell.name << "' is here";
      success = false;
    }
    CellChecker checker(context, module.fileName, cell, fixedDims);
    success &= checker.check();
  }
  success &= checkFixedDimsAreUsed(module, context, fixedDims);
  module.checked = success;
  return success;
}
