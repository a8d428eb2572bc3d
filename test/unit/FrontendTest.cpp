//===- FrontendTest.cpp - Parser, Sema and MLIRGen on strings -------------===//
//
// Runs the front end on in-memory sources and checks the diagnostics (as
// `line:col: severity: message` strings), the AST dump and the IR. Also
// tests DimExpr, and that no input crashes the front end.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "ir/CellDialect.h"
#include "ir/CellTypes.h"
#include "cellrt/DimExpr.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <limits>

using namespace cellc;

namespace {

/// What one run of the front end produced.
struct FrontendRun {
  bool parsed = false;
  bool checked = false;
  std::vector<std::string> diagnostics;
  std::string ast;
  std::string ir;

  bool hasDiagnostic(const std::string &text) const {
    for (const std::string &d : diagnostics)
      if (d.find(text) != std::string::npos)
        return true;
    return false;
  }
  unsigned count(const std::string &severity) const {
    unsigned n = 0;
    for (const std::string &d : diagnostics)
      n += d.find(": " + severity + ": ") != std::string::npos;
    return n;
  }
  std::string dump() const {
    std::string all;
    for (const std::string &d : diagnostics)
      all += d + "\n";
    return all;
  }
};

std::string format(mlir::Diagnostic &diagnostic) {
  std::string text;
  if (auto loc = diagnostic.getLocation().dyn_cast<mlir::FileLineColLoc>())
    text = std::to_string(loc.getLine()) + ":" +
           std::to_string(loc.getColumn()) + ": ";
  switch (diagnostic.getSeverity()) {
  case mlir::DiagnosticSeverity::Error:
    text += "error: ";
    break;
  case mlir::DiagnosticSeverity::Warning:
    text += "warning: ";
    break;
  case mlir::DiagnosticSeverity::Note:
    text += "note: ";
    break;
  case mlir::DiagnosticSeverity::Remark:
    text += "remark: ";
    break;
  }
  return text + diagnostic.str();
}

FrontendRun runFrontend(llvm::StringRef source,
                        const std::map<std::string, int64_t> &fixedDims = {}) {
  FrontendRun run;
  mlir::MLIRContext context;
  context.getOrLoadDialect<mlir::cell::CellDialect>();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "test.cell"), llvm::SMLoc());
  mlir::ScopedDiagnosticHandler handler(
      &context, [&](mlir::Diagnostic &diagnostic) {
        run.diagnostics.push_back(format(diagnostic));
        for (mlir::Diagnostic &note : diagnostic.getNotes())
          run.diagnostics.push_back(format(note));
        return mlir::success();
      });
  std::unique_ptr<ParsedFile> file = parseCellFile(sourceMgr, context);
  run.parsed = file != nullptr;
  if (!file)
    return run;
  run.checked = checkCellFile(*file, context, fixedDims);
  llvm::raw_string_ostream astStream(run.ast);
  printAST(*file, astStream);
  if (!run.checked)
    return run;
  mlir::OwningOpRef<mlir::ModuleOp> module = generateCellIR(*file, context);
  if (module) {
    llvm::raw_string_ostream irStream(run.ir);
    module->print(irStream);
  }
  return run;
}

const char *const atrSource = R"(
cell atr(x: [I]) {
  state h: [H]
  param Wx: [H, I], Wh: [H, H]
  p = Wx @ x
  q = Wh @ h
  i = sigmoid(p + q)
  f = sigmoid(p - q)
  h' = i * p + f * h
}
)";

//===----------------------------------------------------------------------===//
// DimExpr
//===----------------------------------------------------------------------===//

TEST(DimExprTest, SaturatesInsteadOfOverflowing) {
  // --dim H=2^62 once made `3*H` wrap around (undefined behaviour).
  const int64_t max = std::numeric_limits<int64_t>::max();
  DimExpr huge = DimExpr::symbol("H", int64_t(1) << 62);
  EXPECT_EQ((huge * 3).getTerms().front().second, max);
  EXPECT_EQ((huge * -3).getTerms().front().second, -max);
  EXPECT_EQ((DimExpr::constant(max) + DimExpr::constant(1)).getConstant(), max);
  EXPECT_EQ((DimExpr::constant(std::numeric_limits<int64_t>::min()) * -1)
                .getConstant(),
            max);
  EXPECT_EQ(huge.evaluate({{"H", int64_t(1) << 62}}), max);
  EXPECT_EQ(DimExpr::parse("H+H+H")
                ->substitute({{"H", huge}})
                .getTerms()
                .front()
                .second,
            max);
  EXPECT_FALSE(DimExpr::parse("99999999999999999999*H"));
  EXPECT_FALSE(DimExpr::parse("99999999999999999999"));
}

TEST(DimExprTest, ParsesAndPrintsCanonically) {
  EXPECT_EQ(DimExpr::parse("I+3*H")->str(), "3*H+I");
  EXPECT_EQ(DimExpr::parse("H+H")->str(), "2*H");
  EXPECT_EQ(DimExpr::parse("512")->str(), "512");
  EXPECT_EQ(DimExpr::parse("H-H")->str(), "0");
  EXPECT_FALSE(DimExpr::parse("3*"));
  EXPECT_FALSE(DimExpr::parse(""));
}

// The dialect holds the value, not the text: spellings of one expression
// give one type, and the attribute is the same value.
TEST(DimExprTest, TypesAndAttributesHoldTheValue) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::cell::CellDialect>();
  DimExpr h = DimExpr::symbol("H");
  auto twoH = mlir::cell::VecType::get(&context, h + h);
  EXPECT_EQ(twoH, mlir::cell::VecType::get(&context, *DimExpr::parse("2*H")));
  EXPECT_NE(twoH, mlir::cell::VecType::get(&context, h));
  EXPECT_EQ(twoH.getLength().str(), "2*H");
  EXPECT_EQ(hash_value(h + h), hash_value(h * 2));
  auto offset = mlir::cell::DimExprAttr::get(&context, h * 2);
  EXPECT_EQ(offset, mlir::cell::DimExprAttr::get(&context, h + h));
  EXPECT_EQ(offset.getValue(), twoH.getLength());
}

TEST(DimExprTest, ArithmeticAndSubstitution) {
  DimExpr h = DimExpr::symbol("H"), i = DimExpr::symbol("I");
  EXPECT_EQ((h * 3 + i).str(), "3*H+I");
  EXPECT_EQ((h * 3).divideExactly(3)->str(), "H");
  EXPECT_FALSE((h * 3 + i).divideExactly(3));
  DimExpr bound = (h * 3 + i).substitute({{"I", h}});
  EXPECT_EQ(bound.str(), "4*H");
  EXPECT_EQ(bound.evaluate({{"H", 128}}), 512);
  EXPECT_FALSE(bound.evaluate({}));
}

//===----------------------------------------------------------------------===//
// Valid cells
//===----------------------------------------------------------------------===//

TEST(FrontendTest, AtrGeneratesIR) {
  FrontendRun run = runFrontend(atrSource);
  ASSERT_TRUE(run.checked) << run.dump();
  EXPECT_TRUE(run.diagnostics.empty()) << run.dump();
  EXPECT_NE(run.ir.find("cell.cell @atr"), std::string::npos);
  EXPECT_NE(run.ir.find("cell.mat_vec"), std::string::npos);
  EXPECT_NE(run.ir.find("cell.sigmoid"), std::string::npos);
  EXPECT_NE(run.ir.find("cell.yield"), std::string::npos);
}

TEST(FrontendTest, AstHasLocationsAndShapes) {
  FrontendRun run = runFrontend(atrSource);
  ASSERT_TRUE(run.checked) << run.dump();
  EXPECT_NE(run.ast.find("cell atr @2:6"), std::string::npos) << run.ast;
  EXPECT_NE(run.ast.find("stmt p: [H] @5:3"), std::string::npos) << run.ast;
  EXPECT_NE(run.ast.find("mat_vec: [H] @5:10"), std::string::npos) << run.ast;
}

TEST(FrontendTest, PrecedenceOfMatVecNegationAndProducts) {
  FrontendRun run = runFrontend(R"(cell c(x: [I]) {
    state h: [H]
    param W: [H, I]
    h' = -W @ x * h + h
  })");
  ASSERT_TRUE(run.checked) << run.dump();
  size_t add = run.ast.find("binary '+'");
  size_t mul = run.ast.find("binary '*'");
  size_t neg = run.ast.find("neg");
  size_t matVec = run.ast.find("mat_vec");
  ASSERT_NE(matVec, std::string::npos);
  EXPECT_TRUE(add < mul && mul < neg && neg < matVec) << run.ast;
}

TEST(FrontendTest, SymbolicDimensionsUnify) {
  FrontendRun run = runFrontend(R"(cell sru(x: [I]) {
    state c: [H]
    param W: [H, I], Wf: [H, I]
    output h
    f = sigmoid(Wf @ x)
    c' = f * c + (1 - f) * (W @ x)
    h = tanh(c') + (1 - f) * x
  })");
  ASSERT_TRUE(run.checked) << run.dump();
  EXPECT_EQ(run.ir.find("\"I\""), std::string::npos) << run.ir;
  EXPECT_NE(run.ast.find("dim I = H"), std::string::npos) << run.ast;
}

TEST(FrontendTest, FixedDimsBecomeConstants) {
  FrontendRun run = runFrontend(atrSource, {{"H", 512}, {"I", 256}});
  ASSERT_TRUE(run.checked) << run.dump();
  EXPECT_NE(run.ir.find("!cell.mat<\"512\", \"256\">"), std::string::npos)
      << run.ir;
}

TEST(FrontendTest, SplitOfABareSymbolIntroducesAFreshOne) {
  FrontendRun run = runFrontend(R"(cell c(x: [I]) {
    state h: [H]
    param W: [D, I]
    a, b, d = split(W @ x, 3)
    h' = a * b * d + h
  })");
  ASSERT_TRUE(run.checked) << run.dump();
  // The parts meet h, so D = 3*H in the end.
  EXPECT_NE(run.ir.find("!cell.mat<\"3*H\", \"I\">"), std::string::npos)
      << run.ir;
}

TEST(FrontendTest, SemicolonsCommentsAndSeveralCells) {
  FrontendRun run =
      runFrontend("cell a(x: [H]) { state h: [H]; h' = x; } # one\n"
                  "cell b(x: [H]) { state h: [H]\n h' = x * 1e-5 }\n");
  ASSERT_TRUE(run.checked) << run.dump();
  EXPECT_NE(run.ir.find("cell.cell @a"), std::string::npos);
  EXPECT_NE(run.ir.find("cell.cell @b"), std::string::npos);
}

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

TEST(FrontendTest, UnknownFunctionSuggestsTheClosest) {
  FrontendRun run =
      runFrontend("cell c(x: [H]) {\n  state h: [H]\n  h' = sigmod(x)\n}\n");
  EXPECT_FALSE(run.checked);
  EXPECT_TRUE(run.hasDiagnostic(
      "3:8: error: unknown function 'sigmod'; did you mean 'sigmoid'?"))
      << run.dump();
}

TEST(FrontendTest, ReportsEveryErrorInOneRun) {
  FrontendRun run = runFrontend(R"(cell c(x: [I]) {
  state h: [H], c: [H]
  param W: [H, I], U: [H, H]
  a = unknown(x)
  b = x @ h
  d = W @ x + concat(h, h)
  e = f
  h' = h
  h' = h
  p = 1
  p = 2
})");
  EXPECT_FALSE(run.checked);
  EXPECT_TRUE(run.hasDiagnostic("4:7: error: unknown function 'unknown'"))
      << run.dump();
  EXPECT_TRUE(run.hasDiagnostic(
      "5:7: error: left side of '@' must be a matrix param, but 'x' is an "
      "input"))
      << run.dump();
  EXPECT_TRUE(run.hasDiagnostic("6:13: error: shape mismatch: [H] vs [2*H]"))
      << run.dump();
  EXPECT_TRUE(run.hasDiagnostic("7:7: error: unknown name 'f'")) << run.dump();
  EXPECT_TRUE(run.hasDiagnostic("9:3: error: state 'h' has two next values"))
      << run.dump();
  EXPECT_TRUE(run.hasDiagnostic("8:3: note: first next value of 'h' is here"))
      << run.dump();
  EXPECT_TRUE(run.hasDiagnostic("11:3: error: 'p' is already defined"))
      << run.dump();
  EXPECT_TRUE(run.hasDiagnostic("2:17: error: state 'c' has no next value"))
      << run.dump();
  EXPECT_TRUE(run.hasDiagnostic("3:20: warning: param 'U' is never used"))
      << run.dump();
  EXPECT_EQ(run.count("error"), 7u) << run.dump();
}

TEST(FrontendTest, ContradictoryDimensions) {
  FrontendRun run = runFrontend(R"(cell c(x: [I]) {
  state h: [H]
  param W: [3*H, I]
  h' = W @ x + h
})");
  EXPECT_TRUE(run.hasDiagnostic("4:14: error: shape mismatch: [3*H] vs [H]"))
      << run.dump();

  run = runFrontend(R"(cell c(x: [I]) {
  state h: [H]
  h' = x + h
})",
                    {{"H", 4}, {"I", 5}});
  EXPECT_TRUE(run.hasDiagnostic(
      "3:10: error: shape mismatch: [I] vs [H] (that is, [5] vs [4])"))
      << run.dump();
}

TEST(FrontendTest, SplitCountMustDivideTheLength) {
  FrontendRun run = runFrontend(R"(cell c(x: [I]) {
  state h: [H]
  param W: [7, I]
  a, b = split(W @ x, 2)
  h' = h
})");
  EXPECT_TRUE(
      run.hasDiagnostic("4:10: error: cannot split [7] into 2 equal parts"))
      << run.dump();
}

TEST(FrontendTest, SyntaxErrorsAreRephrasedAndAllReported) {
  FrontendRun run = runFrontend(R"(cell c(x: [H]) {
  state h: [H]
  h' = (x + h
}
cell d(x: [H]) {
  state h: [H]
  h' = x *
}
cell e(x: [H] {
  state h: [H]
  h' = x
}
)");
  EXPECT_FALSE(run.parsed);
  EXPECT_TRUE(run.hasDiagnostic("4:1: error: expected ')', found '}'"))
      << run.dump();
  EXPECT_TRUE(
      run.hasDiagnostic("8:1: error: expected an expression, found '}'"))
      << run.dump();
  EXPECT_TRUE(run.hasDiagnostic("9:15: error: expected ',' or ')', found '{'"))
      << run.dump();
  for (const std::string &d : run.diagnostics)
    EXPECT_EQ(d.find("mismatched input"), std::string::npos) << d;
}

TEST(FrontendTest, LexerErrors) {
  FrontendRun run = runFrontend("cell c(x: [H]) { state h: [H]; h' = x ? }");
  EXPECT_FALSE(run.parsed);
  EXPECT_TRUE(run.hasDiagnostic("1:39: error: unexpected character '?'"))
      << run.dump();
  EXPECT_EQ(run.count("error"), 1u) << run.dump();
}

//===----------------------------------------------------------------------===//
// Robustness: no input crashes the front end
//===----------------------------------------------------------------------===//

TEST(FrontendTest, EveryPrefixOfACellIsHandled) {
  std::string source = R"(cell c(x: [I]) {
  state h: [H], c: [H]
  param W: [3*H, I], U: [H, H], g: [3*H], b: [3*H]
  a, f, o = split(layernorm(W @ x, g, b), 3)
  c' = sigmoid(f) * c + (1 - sigmoid(f)) * tanh(a + U @ h)
  h' = -o * tanh(c') / 2
  output h'
})";
  for (size_t length = 0; length <= source.size(); ++length) {
    FrontendRun run = runFrontend(source.substr(0, length));
    EXPECT_TRUE(run.checked || !run.diagnostics.empty() ||
                length < 5 /* empty or whitespace-only file */)
        << "prefix " << length;
  }
}

/// An odd input and every diagnostic the front end must give for it, in
/// order; no diagnostics means it compiles to IR.
struct OddInput {
  std::string source;
  std::vector<std::string> diagnostics;
};

TEST(FrontendTest, OddInputsGetTheirDiagnostics) {
  const OddInput inputs[] = {
      {"", {"1:1: error: the file defines no cell"}},
      {"# only a comment\n", {"1:1: error: the file defines no cell"}},
      {"cell", {"1:5: error: expected a name, found end of file"}},
      {"cell c() {}",
       {"1:6: error: cell 'c' has no inputs",
        "1:6: error: cell 'c' has no state"}},
      {"cell c(x: []) { }",
       {"1:12: error: expected a name or an integer, found ']'"}},
      {"cell c(x: [0]) { state h: [0]; h' = x }",
       {"1:11: error: dimension '0' of 'x' is not positive",
        "1:27: error: dimension '0' of 'h' is not positive"}},
      {"cell c(x: [H, H, H]) { state h: [H, I]; h' = x }",
       {"1:11: error: input 'x' must be a vector [D], not a shape with 3 "
        "dimensions",
        "1:33: error: state 'h' must be a vector [D], not a shape with 2 "
        "dimensions"}},
      {"cell c(x: [99999999999999999999]) { state h: [H]; h' = h }",
       {"1:12: error: integer '99999999999999999999' is too large: a "
        "dimension has at most 2147483647 elements"}},
      {"cell c(x: [H]) { state h: [H]; h' = split(x, 2) }",
       {"1:37: error: 'split' into 2 parts needs 2 names on the left, got 1"}},
      {"cell c(x: [H]) { state h: [H]; a, b = split(x) ; h' = a }",
       {"1:39: error: 'split' takes 2 arguments (a vector and a count), got "
        "1"}},
      {"cell c(x: [H]) { state h: [H]; a = split(x, 0); h' = a }",
       {"1:45: error: the count of 'split' must be a positive integer "
        "literal"}},
      {"cell c(x: [H]) { state h: [H]; a, b = split(3, 2); h' = a }",
       {"1:45: error: 'split' needs a vector, got a scalar"}},
      {"cell c(x: [H]) { state h: [H]; h' = layernorm() + concat() }",
       {"1:37: error: 'layernorm' takes 1 or 3 arguments (e, gain, bias), "
        "got 0",
        "1:51: error: 'concat' takes at least 2 arguments, got 0"}},
      {"cell c(x: [H]) { state h: [H]; param W: [H, H]; h' = W @ W @ x }", {}},
      {"cell c(x: [H]) { state h: [H]; param W: [H, H]; h' = W }",
       {"1:54: error: matrix param 'W' can only be the left side of '@'"}},
      {"cell c(x: [H]) { state h: [H]; output W; h' = x; param W: [H, H] }",
       {"1:39: error: output must be a vector, but 'W' is a matrix"}},
      {"cell c(x: [H]) { state h: [H]; h' = h'; }",
       {"1:37: error: 'h'' is read before it is assigned"}},
      {"cell c(x: [H]) { state h: [H]; h'' = x }",
       {"1:34: error: unexpected character '''"}},
      {"cell c(x: [H]) { state h: [H]; h' = 1 / 0 + log(-1) }",
       {"1:39: error: division by zero: the divisor is the constant 0",
        "1:45: error: the constant log(-1) is NaN in float32; a constant "
        "must be finite"}},
      {"cell c(x: [H]) { state h: [H]; h' = ((((((x)))))) }", {}},
      {"cell c(x: [H]) { state h: [H]; h' = x @ }",
       {"1:41: error: expected an expression, found '}'"}},
      {"\xff\xfe cell",
       {"1:1: error: the file is not valid UTF-8: byte 0xFF here does not "
        "begin a UTF-8 character; save the file as UTF-8"}},
      {"cell c(x: [H]) {\n  state h: [H]\n  h' = x \x01\n}",
       {"3:10: error: unexpected control character 0x01"}},
      {std::string("cell c(x: [H]) { state h: [H]; h' = x") + '\0' + " }",
       {"1:38: error: unexpected control character 0x00"}},
      {"cell c(x: [2*H-3*H]) { state h: [H]; h' = h }",
       {"1:11: error: dimension '-H' of 'x' is not positive"}},
      {"cell c(x: [H]) { state h: [H]; param b: [1 - H]; h' = x }",
       {"1:41: error: dimension '-H+1' of 'b' is not positive for every size "
        "of its symbol; write it as a sum of positive terms"}},
      {"cell c(x: [H]) { state h: [H]; param W: [H, H], b: [H]; "
       "h' = x + W @ b }",
       {"1:70: error: right side of '@' must depend on an input or a state; a "
        "product of params and numbers alone is the same at every step (learn "
        "it as one param instead)"}},
      {"cell c(x: [H]) { state h: [H]; h' = " + std::string(150, '(') + "x" +
           std::string(150, ')') + " }",
       {"1:137: error: expression is nested too deeply: more than 100 levels "
        "of parentheses, calls, '-' and '@'"}},
  };
  for (const OddInput &input : inputs) {
    FrontendRun run = runFrontend(input.source);
    EXPECT_EQ(run.diagnostics, input.diagnostics) << input.source;
    EXPECT_EQ(!run.ir.empty(), input.diagnostics.empty()) << input.source;
  }
}

TEST(FrontendTest, LongSumsStopAtTheTokenLimit) {
  // 20000 terms overflowed the checker's stack; 1000 compile.
  auto sum = [](int terms) {
    std::string source = "cell c(x: [H]) { state h: [H]; h' = x";
    for (int i = 1; i < terms; ++i)
      source += " + x";
    return source + " }";
  };
  FrontendRun tooLong = runFrontend(sum(20000));
  ASSERT_EQ(tooLong.diagnostics.size(), 1u);
  EXPECT_NE(tooLong.diagnostics[0].find(
                "error: cell is too long: more than 2048 tokens"),
            std::string::npos)
      << tooLong.dump();
  FrontendRun accepted = runFrontend(sum(1000));
  EXPECT_TRUE(accepted.diagnostics.empty()) << accepted.dump();
  EXPECT_FALSE(accepted.ir.empty());
}

TEST(FrontendTest, ParsingStopsAfterTooManyErrors) {
  // A million stray characters: the parser stops after the 21st error.
  std::string source = "cell c(x: [H]) { state h: [H]; h' = x " +
                       std::string(1000000, '$') + " }";
  FrontendRun run = runFrontend(source);
  EXPECT_FALSE(run.parsed);
  EXPECT_EQ(run.count("error"), 21u) << run.dump();
}

} // namespace
