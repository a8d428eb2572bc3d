//===- AST.h - Abstract syntax tree of .cell files --------------*- C++ -*-===//
//
// The parser builds this tree; Sema checks it and records the shape of every
// value in it; MLIRGen and the AST printer read it. Every node carries the
// 1-based line and column of its first character; the file name is kept once,
// in the Module. The tree has no ANTLR or MLIR dependency.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_FRONTEND_AST_H
#define CELLC_FRONTEND_AST_H

#include "cellrt/DimExpr.h"
#include "cellrt/InitScheme.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cellc {
namespace ast {

/// A 1-based position in the source file.
struct Location {
  unsigned line = 0;
  unsigned col = 0;
};

/// The shape of a value: a scalar, a `[D]` vector or an `[R, C]` matrix.
/// `Invalid` marks a value whose shape could not be inferred because of an
/// error already reported, so that one mistake is reported once.
struct Shape {
  enum class Kind { Invalid, Scalar, Vector, Matrix };
  Kind kind = Kind::Invalid;
  std::vector<DimExpr> dims;

  static Shape invalid() { return {}; }
  static Shape scalar() { return {Kind::Scalar, {}}; }
  static Shape vector(DimExpr length) { return {Kind::Vector, {length}}; }
  static Shape matrix(DimExpr rows, DimExpr cols) {
    return {Kind::Matrix, {rows, cols}};
  }
  bool isInvalid() const { return kind == Kind::Invalid; }
  bool isScalar() const { return kind == Kind::Scalar; }
  bool isVector() const { return kind == Kind::Vector; }
  bool isMatrix() const { return kind == Kind::Matrix; }
  /// `[H]`, `[3*H, I]`, `scalar` or `<invalid>`.
  std::string str() const;
};

/// Base of all expressions. `shape` is filled in by Sema.
struct Expr {
  enum class Kind { Number, Name, Unary, Binary, MatVec, Call };
  Expr(Kind kind, Location loc) : kind(kind), loc(loc) {}
  /// Out of line so that the vtable lives in AST.cpp only (that file is
  /// built with RTTI, the users of the tree without it).
  virtual ~Expr();

  const Kind kind;
  Location loc;
  Shape shape;
};

/// A numeric literal: a scalar that broadcasts.
struct NumberExpr : Expr {
  static bool classof(const Expr *e) { return e->kind == Kind::Number; }
  NumberExpr(Location loc, double value, std::string spelling)
      : Expr(Kind::Number, loc), value(value), spelling(std::move(spelling)) {}
  /// The literal as a double: inf when it overflows one (Sema reports it).
  double value;
  /// As written (`3`, `3.0`, `1e400`), for messages and for counts that
  /// must be integer literals.
  std::string spelling;
  /// Written without a decimal point or an exponent.
  bool isInteger() const {
    return spelling.find_first_not_of("0123456789") == std::string::npos;
  }
};

/// A reference to a named value; `primed` for a state's next value (`h'`).
struct NameExpr : Expr {
  static bool classof(const Expr *e) { return e->kind == Kind::Name; }
  NameExpr(Location loc, std::string name, bool primed)
      : Expr(Kind::Name, loc), name(std::move(name)), primed(primed) {}
  std::string name;
  bool primed;
  /// The spelling as written: `h` or `h'`.
  std::string spelling() const { return primed ? name + "'" : name; }
};

/// Negation `-e`.
struct UnaryExpr : Expr {
  static bool classof(const Expr *e) { return e->kind == Kind::Unary; }
  UnaryExpr(Location loc, std::unique_ptr<Expr> operand)
      : Expr(Kind::Unary, loc), operand(std::move(operand)) {}
  std::unique_ptr<Expr> operand;
};

/// An element-wise `+ - * /`; `loc` is that of the operator.
struct BinaryExpr : Expr {
  static bool classof(const Expr *e) { return e->kind == Kind::Binary; }
  BinaryExpr(Location loc, char op, std::unique_ptr<Expr> lhs,
             std::unique_ptr<Expr> rhs)
      : Expr(Kind::Binary, loc), op(op), lhs(std::move(lhs)),
        rhs(std::move(rhs)) {}
  char op;
  std::unique_ptr<Expr> lhs, rhs;
};

/// A matrix-vector product `W @ e`; `loc` is that of the `@`.
struct MatVecExpr : Expr {
  static bool classof(const Expr *e) { return e->kind == Kind::MatVec; }
  MatVecExpr(Location loc, std::unique_ptr<Expr> matrix,
             std::unique_ptr<Expr> vector)
      : Expr(Kind::MatVec, loc), matrix(std::move(matrix)),
        vector(std::move(vector)) {}
  std::unique_ptr<Expr> matrix, vector;
};

/// A call of a built-in function, e.g. `sigmoid(e)` or `split(e, 3)`.
struct CallExpr : Expr {
  static bool classof(const Expr *e) { return e->kind == Kind::Call; }
  CallExpr(Location loc, std::string callee,
           std::vector<std::unique_ptr<Expr>> args)
      : Expr(Kind::Call, loc), callee(std::move(callee)),
        args(std::move(args)) {}
  std::string callee;
  std::vector<std::unique_ptr<Expr>> args;
};

/// A written dimension list `[H, I]` as declared.
struct DeclaredShape {
  Location loc;
  std::vector<DimExpr> dims;
};

/// A number in a param's initialiser, with its sign: `-0.5`, `1e-3`.
struct InitNumber {
  Location loc;
  double value = 0;
  std::string spelling;
};

/// A param's initialiser as written: `= 1` (a constant) or
/// `~ uniform(0.05)` (a scheme and its arguments, maybe none).
struct Init {
  /// Of the `=` or `~`.
  Location loc;
  /// Written with `~`.
  bool drawn = false;
  /// The scheme's name and where it is; empty after `= NUMBER`, and after
  /// `~ NUMBER` (an error).
  std::string scheme;
  Location schemeLoc;
  /// `= NUMBER`'s number, or the scheme's arguments.
  std::vector<InitNumber> args;
  /// Filled in by Sema: what the runtime will draw.
  cellrt::InitScheme checked;
};

/// A declaration of an input, state or param.
struct Decl {
  enum class Role { Input, State, Param };
  Role role;
  std::string name;
  Location loc;
  DeclaredShape declared;
  /// A param's initialiser, if it has one.
  std::optional<Init> init;
  /// Filled in by Sema: the declared shape under the cell's unification.
  Shape shape;
};

/// The left side of a statement: `name` or `name'`.
struct Target {
  std::string name;
  bool primed = false;
  Location loc;
  /// Filled in by Sema.
  Shape shape;
  std::string spelling() const { return primed ? name + "'" : name; }
};

/// `a = e`, `h' = e` or `a, b, c = split(e, 3)`.
struct Stmt {
  Location loc;
  std::vector<Target> targets;
  std::unique_ptr<Expr> value;
  /// Set by Sema when the right side is `split(e, n)`.
  bool isSplit() const;
};

/// `output NAME`.
struct Output {
  Target target;
  Location loc;
};

/// One `cell NAME(...) { ... }`.
struct Cell {
  std::string name;
  Location loc;
  std::vector<Decl> inputs;
  std::vector<Decl> states;
  std::vector<Decl> params;
  std::vector<Output> outputs;
  std::vector<Stmt> stmts;
  /// Filled in by Sema: the solved binding of every symbolic dimension that
  /// unification or `--dim` fixed (e.g. `I -> H`, `H -> 512`).
  std::vector<std::pair<std::string, DimExpr>> dimBindings;
};

/// A whole `.cell` file.
struct Module {
  std::string fileName;
  std::vector<Cell> cells;
  /// Set by a successful checkCellFile; MLIRGen requires it.
  bool checked = false;
};

/// Whether `expr` is a `split(...)` call (allowed only as a whole statement).
inline bool isSplitCall(const Expr *expr) {
  return expr && expr->kind == Expr::Kind::Call &&
         static_cast<const CallExpr *>(expr)->callee == "split";
}

inline bool Stmt::isSplit() const { return isSplitCall(value.get()); }

} // namespace ast
} // namespace cellc

#endif // CELLC_FRONTEND_AST_H
