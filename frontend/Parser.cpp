//===- Parser.cpp - .cell source to AST -----------------------------------===//
//
// Runs the ANTLR-generated lexer and parser over the main buffer, routes
// their syntax errors into MLIR diagnostics with readable messages, and
// converts the parse tree into the AST of AST.h.
//
// This file is built with exceptions and RTTI (the ANTLR runtime needs
// them); it must not subclass LLVM or MLIR classes, whose libraries are
// built without RTTI.
//
//===----------------------------------------------------------------------===//

#include "frontend/AST.h"
#include "frontend/Frontend.h"

#include "CellLexer.h"
#include "CellParser.h"
#include "antlr4-runtime.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cerrno>
#include <cstdlib>

using namespace cellc;
using cellgrammar::CellLexer;
using cellgrammar::CellParser;

ParsedFile::ParsedFile() = default;
ParsedFile::~ParsedFile() = default;

namespace {

/// Thrown out of the ANTLR lexer or parser to stop it: more errors than
/// limits::kMaxErrors (the rest would not be shown anyway), or an expression
/// nested more deeply than limits::kMaxNestingDepth.
struct StopParsing {
  /// Where the nesting limit was exceeded (line and 0-based column, as
  /// ANTLR counts); line 0 after too many errors. Not the token itself: the
  /// token stream is gone when this is caught.
  size_t tooDeepLine = 0, tooDeepColumn = 0;
};

/// Reports lexer and parser errors as MLIR errors at the offending token,
/// rephrasing ANTLR's messages ("mismatched input 'x' expecting {...}") into
/// "expected ')', found 'x'" style. ANTLR's own recovery keeps going, so every
/// syntax error in the file is reported.
class DiagnosticErrorListener : public antlr4::BaseErrorListener {
public:
  DiagnosticErrorListener(mlir::MLIRContext &context, std::string fileName)
      : context(context), fileName(std::move(fileName)) {}

  void syntaxError(antlr4::Recognizer *recognizer,
                   antlr4::Token *offendingSymbol, size_t line,
                   size_t charPositionInLine, const std::string &message,
                   std::exception_ptr error) override {
    ++errorCount;
    mlir::Location loc = mlir::FileLineColLoc::get(&context, fileName, line,
                                                   charPositionInLine + 1);
    mlir::emitError(loc) << rephrase(recognizer, offendingSymbol, message,
                                     error);
    // One error past the limit, so that the handler says "too many errors".
    if (errorCount > limits::kMaxErrors)
      throw StopParsing();
  }

  unsigned errorCount = 0;

private:
  std::string rephrase(antlr4::Recognizer *recognizer, antlr4::Token *token,
                       const std::string &message, std::exception_ptr error);

  mlir::MLIRContext &context;
  std::string fileName;
};

/// The found token as users see it: `'foo'` or `end of file`.
std::string describeToken(antlr4::Token *token) {
  if (!token || token->getType() == antlr4::Token::EOF)
    return "end of file";
  return "'" + token->getText() + "'";
}

/// One expected token kind in words.
std::string describeTokenType(const antlr4::dfa::Vocabulary &vocabulary,
                              ssize_t type) {
  if (type == static_cast<ssize_t>(antlr4::Token::EOF))
    return "end of file";
  switch (type) {
  case CellParser::NAME:
    return "a name";
  case CellParser::PRIMED:
    return "a primed name";
  case CellParser::INT:
    return "an integer";
  case CellParser::FLOAT:
    return "a number";
  default:
    return vocabulary.getDisplayName(type);
  }
}

/// The expected set in words (`')'`, `',' or ')'`, `an expression`), or ""
/// when it is too large to be helpful.
std::string describeExpected(const antlr4::misc::IntervalSet &expected,
                             const antlr4::dfa::Vocabulary &vocabulary) {
  if (expected.contains(static_cast<size_t>(CellParser::INT)) &&
      expected.contains(static_cast<size_t>(CellParser::FLOAT)) &&
      expected.contains(static_cast<size_t>(CellParser::NAME)))
    return "an expression";
  std::vector<ssize_t> types = expected.toList();
  // "Expected end of file or 'cell'" reads better as "expected 'cell'".
  if (types.size() > 1)
    llvm::erase_value(types, static_cast<ssize_t>(antlr4::Token::EOF));
  if (types.empty() || types.size() > 4)
    return "";
  std::string text;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i)
      text += i + 1 == types.size() ? " or " : ", ";
    text += describeTokenType(vocabulary, types[i]);
  }
  return text;
}

/// A param's initialiser takes a number or a scheme, and a scheme takes
/// numbers, not expressions: says so where the parser stopped in one.
std::optional<std::string> rephraseInInit(antlr4::Parser *parser,
                                          antlr4::Token *token) {
  antlr4::ParserRuleContext *context = parser->getContext();
  std::string found = describeToken(token);
  if (dynamic_cast<CellParser::InitNumberContext *>(context))
    return "expected a number, found " + found;
  if (!dynamic_cast<CellParser::InitValueContext *>(context))
    return std::nullopt;
  bool atStart = token && context->getStart() &&
                 context->getStart()->getTokenIndex() == token->getTokenIndex();
  // Inside `uniform(...)`, where a number or the end of the list may come.
  if (!atStart)
    return parser->getExpectedTokens().contains(
               static_cast<size_t>(CellParser::INT))
               ? std::optional<std::string>("expected a number, found " + found)
               : std::nullopt;
  auto *decl = dynamic_cast<CellParser::ParamDeclContext *>(context->parent);
  std::string op = decl && decl->initOp ? decl->initOp->getText() : "~";
  return "expected " +
         std::string(op == "=" ? "a number"
                               : "a scheme such as 'uniform(0.1)'") +
         " after '" + op + "', found " + found;
}

std::string DiagnosticErrorListener::rephrase(antlr4::Recognizer *recognizer,
                                              antlr4::Token *token,
                                              const std::string &message,
                                              std::exception_ptr error) {
  // Lexer: "token recognition error at: 'x'".
  if (dynamic_cast<antlr4::Lexer *>(recognizer)) {
    size_t quote = message.find("at: '");
    std::string text =
        quote == std::string::npos ? message : message.substr(quote + 5);
    if (!text.empty() && text.back() == '\'')
      text.pop_back();
    if (text == "\\n" || text.empty())
      return "unexpected end of line";
    if (text.size() == 1 && !llvm::isPrint(text[0]))
      return "unexpected control character 0x" + llvm::toHex(text);
    return "unexpected character '" + text + "'";
  }

  auto *parser = dynamic_cast<antlr4::Parser *>(recognizer);
  if (!parser)
    return message;
  std::string found = describeToken(token);
  if (std::optional<std::string> text = rephraseInInit(parser, token))
    return *text;

  // Missing or extra single token: recovery already knows what it expected.
  if (!error) {
    std::string expected =
        describeExpected(parser->getExpectedTokens(), parser->getVocabulary());
    if (message.rfind("missing", 0) == 0 && !expected.empty())
      return "expected " + expected + ", found " + found;
    if (expected.empty())
      return "unexpected " + found;
    return "unexpected " + found + ", expected " + expected;
  }

  try {
    std::rethrow_exception(error);
  } catch (antlr4::InputMismatchException &mismatch) {
    std::string expected =
        describeExpected(mismatch.getExpectedTokens(), parser->getVocabulary());
    if (!expected.empty())
      return "expected " + expected + ", found " + found;
  } catch (antlr4::NoViableAltException &) {
    // The token that made every alternative fail.
  } catch (antlr4::FailedPredicateException &) {
  } catch (...) {
  }
  return "unexpected " + found;
}

/// Converts the parse tree of an error-free parse into the AST.
class ASTBuilder {
public:
  explicit ASTBuilder(mlir::MLIRContext &context, const std::string &fileName)
      : context(context), fileName(fileName) {}

  void buildFile(CellParser::FileContext *file, ast::Module &module);
  unsigned errorCount = 0;

private:
  void buildCell(CellParser::CellContext *cellContext, ast::Cell &cell);
  ast::Decl buildDecl(CellParser::DeclContext *decl, ast::Decl::Role role);
  ast::Decl buildParamDecl(CellParser::ParamDeclContext *decl);
  ast::InitNumber buildInitNumber(CellParser::InitNumberContext *number);
  DimExpr buildDim(CellParser::DimContext *dim);
  DimExpr buildDimTerm(CellParser::DimTermContext *term);
  ast::Target buildTarget(CellParser::TargetContext *target);
  std::unique_ptr<ast::Expr> buildExpr(CellParser::ExprContext *expr);
  std::unique_ptr<ast::Expr> buildBinary(antlr4::Token *op,
                                         CellParser::ExprContext *lhs,
                                         CellParser::ExprContext *rhs);
  int64_t parseInteger(antlr4::Token *token);

  static ast::Location locationOf(antlr4::Token *token) {
    return {static_cast<unsigned>(token->getLine()),
            static_cast<unsigned>(token->getCharPositionInLine() + 1)};
  }
  mlir::InFlightDiagnostic error(antlr4::Token *token) {
    ++errorCount;
    ast::Location loc = locationOf(token);
    return mlir::emitError(
        mlir::FileLineColLoc::get(&context, fileName, loc.line, loc.col));
  }

  mlir::MLIRContext &context;
  const std::string &fileName;
};

void ASTBuilder::buildFile(CellParser::FileContext *file, ast::Module &module) {
  for (CellParser::CellContext *cellContext : file->cell()) {
    module.cells.emplace_back();
    buildCell(cellContext, module.cells.back());
  }
}

void ASTBuilder::buildCell(CellParser::CellContext *cellContext,
                           ast::Cell &cell) {
  cell.name = cellContext->NAME()->getText();
  cell.loc = locationOf(cellContext->NAME()->getSymbol());
  for (CellParser::DeclContext *decl : cellContext->decl())
    cell.inputs.push_back(buildDecl(decl, ast::Decl::Role::Input));

  for (CellParser::ItemContext *item : cellContext->item()) {
    if (auto *state = dynamic_cast<CellParser::StateItemContext *>(item)) {
      for (CellParser::DeclContext *decl : state->decl())
        cell.states.push_back(buildDecl(decl, ast::Decl::Role::State));
    } else if (auto *param =
                   dynamic_cast<CellParser::ParamItemContext *>(item)) {
      for (CellParser::ParamDeclContext *decl : param->paramDecl())
        cell.params.push_back(buildParamDecl(decl));
    } else if (auto *output =
                   dynamic_cast<CellParser::OutputItemContext *>(item)) {
      ast::Output out;
      out.loc = locationOf(output->getStart());
      out.target = buildTarget(output->target());
      cell.outputs.push_back(std::move(out));
    } else if (auto *assign =
                   dynamic_cast<CellParser::AssignItemContext *>(item)) {
      ast::Stmt stmt;
      stmt.loc = locationOf(assign->getStart());
      for (CellParser::TargetContext *target : assign->target())
        stmt.targets.push_back(buildTarget(target));
      stmt.value = buildExpr(assign->expr());
      cell.stmts.push_back(std::move(stmt));
    }
    // EmptyItemContext: a stray `;`.
  }
}

ast::Decl ASTBuilder::buildDecl(CellParser::DeclContext *decl,
                                ast::Decl::Role role) {
  ast::Decl result;
  result.role = role;
  result.name = decl->NAME()->getText();
  result.loc = locationOf(decl->NAME()->getSymbol());
  result.declared.loc = locationOf(decl->shape()->getStart());
  for (CellParser::DimContext *dim : decl->shape()->dim())
    result.declared.dims.push_back(buildDim(dim));
  return result;
}

ast::Decl ASTBuilder::buildParamDecl(CellParser::ParamDeclContext *decl) {
  ast::Decl result = buildDecl(decl->decl(), ast::Decl::Role::Param);
  if (!decl->initOp)
    return result;
  ast::Init init;
  init.loc = locationOf(decl->initOp);
  init.drawn = decl->initOp->getText() == "~";
  CellParser::InitValueContext *value = decl->initValue();
  if (auto *scheme = dynamic_cast<CellParser::SchemeInitContext *>(value)) {
    init.scheme = scheme->NAME()->getText();
    init.schemeLoc = locationOf(scheme->NAME()->getSymbol());
    for (CellParser::InitNumberContext *number : scheme->initNumber())
      init.args.push_back(buildInitNumber(number));
  } else {
    auto *number = dynamic_cast<CellParser::NumberInitContext *>(value);
    init.args.push_back(buildInitNumber(number->initNumber()));
  }
  result.init = std::move(init);
  return result;
}

ast::InitNumber
ASTBuilder::buildInitNumber(CellParser::InitNumberContext *number) {
  ast::InitNumber result;
  result.loc = locationOf(number->getStart());
  result.spelling = number->getText();
  // Beyond a double it is inf, which Sema reports as not a finite float32.
  result.value = std::strtod(result.spelling.c_str(), nullptr);
  return result;
}

DimExpr ASTBuilder::buildDim(CellParser::DimContext *dim) {
  std::vector<CellParser::DimTermContext *> terms = dim->dimTerm();
  DimExpr sum = buildDimTerm(terms[0]);
  for (size_t i = 1; i < terms.size() && i - 1 < dim->dimSum.size(); ++i) {
    DimExpr term = buildDimTerm(terms[i]);
    sum = dim->dimSum[i - 1]->getText() == "-" ? sum - term : sum + term;
  }
  return sum;
}

DimExpr ASTBuilder::buildDimTerm(CellParser::DimTermContext *term) {
  if (auto *symbol = dynamic_cast<CellParser::SymbolDimContext *>(term))
    return DimExpr::symbol(symbol->NAME()->getText());
  auto *scaled = dynamic_cast<CellParser::ScaledDimContext *>(term);
  int64_t factor = parseInteger(scaled->INT()->getSymbol());
  if (scaled->NAME())
    return DimExpr::symbol(scaled->NAME()->getText(), factor);
  return DimExpr::constant(factor);
}

int64_t ASTBuilder::parseInteger(antlr4::Token *token) {
  errno = 0;
  long long value = std::strtoll(token->getText().c_str(), nullptr, 10);
  if (errno == ERANGE || value > limits::kMaxDimension) {
    error(token) << "integer '" << token->getText()
                 << "' is too large: a dimension has at most "
                 << limits::kMaxDimension << " elements";
    return 1;
  }
  return value;
}

ast::Target ASTBuilder::buildTarget(CellParser::TargetContext *target) {
  ast::Target result;
  result.loc = locationOf(target->getStart());
  if (target->PRIMED()) {
    std::string text = target->PRIMED()->getText();
    result.name = text.substr(0, text.size() - 1);
    result.primed = true;
  } else {
    result.name = target->NAME()->getText();
  }
  return result;
}

std::unique_ptr<ast::Expr>
ASTBuilder::buildBinary(antlr4::Token *op, CellParser::ExprContext *lhs,
                        CellParser::ExprContext *rhs) {
  return std::make_unique<ast::BinaryExpr>(locationOf(op), op->getText()[0],
                                           buildExpr(lhs), buildExpr(rhs));
}

std::unique_ptr<ast::Expr>
ASTBuilder::buildExpr(CellParser::ExprContext *expr) {
  ast::Location loc = locationOf(expr->getStart());
  if (auto *call = dynamic_cast<CellParser::CallExprContext *>(expr)) {
    std::vector<std::unique_ptr<ast::Expr>> args;
    for (CellParser::ExprContext *arg : call->expr())
      args.push_back(buildExpr(arg));
    return std::make_unique<ast::CallExpr>(loc, call->NAME()->getText(),
                                           std::move(args));
  }
  if (auto *paren = dynamic_cast<CellParser::ParenExprContext *>(expr))
    return buildExpr(paren->expr());
  if (auto *name = dynamic_cast<CellParser::NameExprContext *>(expr))
    return std::make_unique<ast::NameExpr>(loc, name->NAME()->getText(), false);
  if (auto *primed = dynamic_cast<CellParser::PrimedExprContext *>(expr)) {
    std::string text = primed->PRIMED()->getText();
    return std::make_unique<ast::NameExpr>(loc, text.substr(0, text.size() - 1),
                                           true);
  }
  if (dynamic_cast<CellParser::NumberExprContext *>(expr)) {
    std::string text = expr->getText();
    return std::make_unique<ast::NumberExpr>(
        loc, std::strtod(text.c_str(), nullptr), text);
  }
  if (auto *matVec = dynamic_cast<CellParser::MatVecExprContext *>(expr)) {
    auto *at = dynamic_cast<antlr4::tree::TerminalNode *>(matVec->children[1]);
    return std::make_unique<ast::MatVecExpr>(
        at ? locationOf(at->getSymbol()) : loc, buildExpr(matVec->expr(0)),
        buildExpr(matVec->expr(1)));
  }
  if (auto *neg = dynamic_cast<CellParser::NegExprContext *>(expr))
    return std::make_unique<ast::UnaryExpr>(loc, buildExpr(neg->expr()));
  if (auto *mul = dynamic_cast<CellParser::MulExprContext *>(expr))
    return buildBinary(mul->op, mul->expr(0), mul->expr(1));
  auto *add = dynamic_cast<CellParser::AddExprContext *>(expr);
  return buildBinary(add->op, add->expr(0), add->expr(1));
}

/// The generated parser, stopped before its recursion goes deeper than
/// limits::kMaxNestingDepth: every level of an expression (parentheses, a
/// call, unary '-', the right side of '@' or of an operator) is one call of
/// the recursive `expr` rule, which enters through enterRecursionRule.
class DepthLimitedParser : public CellParser {
public:
  using CellParser::CellParser;
  using CellParser::enterRecursionRule;

  void enterRecursionRule(antlr4::ParserRuleContext *context, size_t state,
                          size_t ruleIndex, int precedence) override {
    // Thrown before the level is entered: the generated code unrolls only
    // the levels that were.
    if (depth == limits::kMaxNestingDepth)
      throw StopParsing{getCurrentToken()->getLine(),
                        getCurrentToken()->getCharPositionInLine()};
    ++depth;
    CellParser::enterRecursionRule(context, state, ruleIndex, precedence);
  }
  void unrollRecursionContexts(antlr4::ParserRuleContext *parent) override {
    --depth;
    CellParser::unrollRecursionContexts(parent);
  }

private:
  unsigned depth = 0;
};

/// Gives up on a file with more lexical errors than will be shown: the
/// parse reports them (and stops) sooner than a lexer would finish it.
class StopAfterErrors : public antlr4::BaseErrorListener {
public:
  void syntaxError(antlr4::Recognizer *, antlr4::Token *, size_t, size_t,
                   const std::string &, std::exception_ptr) override {
    if (++errors > limits::kMaxErrors)
      throw StopParsing();
  }

private:
  unsigned errors = 0;
};

/// The first token past limits::kMaxTokensPerCell tokens since the last
/// `cell` keyword (or the start of the file), as (line, 0-based column);
/// std::nullopt when there is none, or too many lexical errors to tell.
std::optional<std::pair<size_t, size_t>>
findOverlongCell(antlr4::ANTLRInputStream &input) {
  StopAfterErrors stopAfterErrors;
  CellLexer lexer(&input);
  lexer.removeErrorListeners();
  lexer.addErrorListener(&stopAfterErrors);
  unsigned inCell = 0;
  try {
    for (std::unique_ptr<antlr4::Token> token = lexer.nextToken();
         token->getType() != antlr4::Token::EOF; token = lexer.nextToken()) {
      if (token->getType() != CellLexer::NAME && token->getText() == "cell")
        inCell = 0;
      if (++inCell > limits::kMaxTokensPerCell)
        return std::make_pair(token->getLine(), token->getCharPositionInLine());
    }
  } catch (const StopParsing &) {
  }
  return std::nullopt;
}

/// Reports a cell longer than limits::kMaxTokensPerCell tokens. Checked on
/// the token stream, before the parser builds anything, by a lexer of its
/// own that reports nothing: the parse that follows reports lexical and
/// syntax errors together, in source order.
bool checkCellLengths(antlr4::ANTLRInputStream &input,
                      mlir::MLIRContext &context, const std::string &fileName) {
  std::optional<std::pair<size_t, size_t>> overlong = findOverlongCell(input);
  if (!overlong)
    return true;
  mlir::emitError(mlir::FileLineColLoc::get(
      &context, fileName, static_cast<unsigned>(overlong->first),
      static_cast<unsigned>(overlong->second + 1)))
      << "cell is too long: more than " << limits::kMaxTokensPerCell
      << " tokens (the limit keeps compile time bounded; split the work into "
         "several cells)";
  return false;
}

/// ANTLR reads UTF-8 only, and throws on anything else; this reports the
/// first byte that is not part of a valid UTF-8 character, at its line and
/// (byte) column.
bool checkUTF8(llvm::StringRef text, mlir::MLIRContext &context,
               const std::string &fileName) {
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(text.data());
  const llvm::UTF8 *position = begin;
  if (llvm::isLegalUTF8String(&position, begin + text.size()))
    return true;
  size_t offset = position - begin;
  llvm::StringRef before = text.take_front(offset);
  unsigned line = 1 + before.count('\n');
  size_t lineStart = before.rfind('\n');
  unsigned column = static_cast<unsigned>(
      offset - (lineStart == llvm::StringRef::npos ? 0 : lineStart + 1) + 1);
  mlir::emitError(mlir::FileLineColLoc::get(&context, fileName, line, column))
      << "the file is not valid UTF-8: byte 0x"
      << llvm::toHex(text.substr(offset, 1))
      << " here does not begin a UTF-8 character; save the file as UTF-8";
  return false;
}

/// The text after a UTF-8 byte-order mark, which some editors (Notepad,
/// Excel exports) write at the start of a file. It is not part of the cell;
/// columns on the first line then count as the editor shows them.
llvm::StringRef withoutByteOrderMark(llvm::StringRef text) {
  text.consume_front("\xEF\xBB\xBF");
  return text;
}

} // namespace

std::unique_ptr<ParsedFile> cellc::parseCellFile(llvm::SourceMgr &sourceMgr,
                                                 mlir::MLIRContext &context) {
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  std::string fileName = buffer->getBufferIdentifier().str();
  auto file = std::make_unique<ParsedFile>();
  file->module = std::make_unique<ast::Module>();
  file->module->fileName = fileName;

  if (!checkUTF8(buffer->getBuffer(), context, fileName))
    return nullptr;
  llvm::StringRef text = withoutByteOrderMark(buffer->getBuffer());
  try {
    antlr4::ANTLRInputStream input(text.data(), text.size());
    if (!checkCellLengths(input, context, fileName))
      return nullptr;
    input.reset();
    CellLexer lexer(&input);
    antlr4::CommonTokenStream tokens(&lexer);
    DiagnosticErrorListener listener(context, fileName);
    lexer.removeErrorListeners();
    lexer.addErrorListener(&listener);
    DepthLimitedParser parser(&tokens);
    parser.removeErrorListeners();
    parser.addErrorListener(&listener);
    CellParser::FileContext *tree = parser.file();
    if (listener.errorCount != 0 || parser.getNumberOfSyntaxErrors() != 0)
      return nullptr;
    ASTBuilder builder(context, fileName);
    builder.buildFile(tree, *file->module);
    if (builder.errorCount != 0)
      return nullptr;
  } catch (const StopParsing &stop) {
    if (stop.tooDeepLine)
      mlir::emitError(mlir::FileLineColLoc::get(
          &context, fileName, static_cast<unsigned>(stop.tooDeepLine),
          static_cast<unsigned>(stop.tooDeepColumn + 1)))
          << "expression is nested too deeply: more than "
          << limits::kMaxNestingDepth
          << " levels of parentheses, calls, '-' and '@'";
    return nullptr;
  } catch (const std::exception &exception) {
    mlir::emitError(mlir::FileLineColLoc::get(&context, fileName, 1, 1))
        << "internal parser error: " << exception.what();
    return nullptr;
  } catch (...) {
    mlir::emitError(mlir::FileLineColLoc::get(&context, fileName, 1, 1))
        << "internal parser error";
    return nullptr;
  }
  return file;
}
