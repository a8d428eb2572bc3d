//===- ASTPrinter.cpp - Textual dump of the AST for -emit=ast -------------===//
//
// One node per line, indented by depth, each with its `@line:col` and, once
// Sema ran, its shape:
//
//   cell atr @2:6
//     input x: [I] @2:11
//     stmt p @6:3
//       mat_vec: [H] @6:8
//         name Wx: [H, I] @6:5
//
//===----------------------------------------------------------------------===//

#include "frontend/AST.h"
#include "frontend/Frontend.h"

#include "llvm/Support/Casting.h"
#include "llvm/Support/raw_ostream.h"

using namespace cellc;
using namespace cellc::ast;

namespace {

class ASTPrinter {
public:
  explicit ASTPrinter(llvm::raw_ostream &os) : os(os) {}

  void print(const Module &module) {
    os << "module '" << module.fileName << "'\n";
    for (const Cell &cell : module.cells)
      print(cell);
  }

private:
  void print(const Cell &cell);
  void print(const Decl &decl, unsigned depth);
  void print(const Expr &expr, unsigned depth);

  void line(unsigned depth) { os.indent(2 * depth); }
  void shape(const Shape &shape) {
    if (!shape.isInvalid())
      os << ": " << shape.str();
  }
  void at(Location loc) { os << " @" << loc.line << ":" << loc.col << "\n"; }

  llvm::raw_ostream &os;
};

void ASTPrinter::print(const Cell &cell) {
  os << "cell " << cell.name;
  at(cell.loc);
  for (const std::vector<Decl> *decls :
       {&cell.inputs, &cell.states, &cell.params})
    for (const Decl &decl : *decls)
      print(decl, 1);
  for (const auto &[symbol, value] : cell.dimBindings) {
    line(1);
    os << "dim " << symbol << " = " << value.str() << "\n";
  }
  for (const Stmt &stmt : cell.stmts) {
    line(1);
    os << "stmt";
    for (size_t i = 0; i < stmt.targets.size(); ++i) {
      os << (i ? ", " : " ") << stmt.targets[i].spelling();
      shape(stmt.targets[i].shape);
    }
    at(stmt.loc);
    print(*stmt.value, 2);
  }
  for (const Output &output : cell.outputs) {
    line(1);
    os << "output " << output.target.spelling();
    shape(output.target.shape);
    at(output.loc);
  }
}

void ASTPrinter::print(const Decl &decl, unsigned depth) {
  line(depth);
  switch (decl.role) {
  case Decl::Role::Input:
    os << "input ";
    break;
  case Decl::Role::State:
    os << "state ";
    break;
  case Decl::Role::Param:
    os << "param ";
    break;
  }
  os << decl.name << " [";
  for (size_t i = 0; i < decl.declared.dims.size(); ++i)
    os << (i ? ", " : "") << decl.declared.dims[i].str();
  os << "]";
  shape(decl.shape);
  if (decl.init && !decl.init->checked.isNone())
    os << " init " << decl.init->checked.str();
  at(decl.loc);
}

void ASTPrinter::print(const Expr &expr, unsigned depth) {
  line(depth);
  if (const auto *number = llvm::dyn_cast<NumberExpr>(&expr)) {
    os << "number " << number->value;
  } else if (const auto *name = llvm::dyn_cast<NameExpr>(&expr)) {
    os << "name " << name->spelling();
  } else if (llvm::isa<UnaryExpr>(&expr)) {
    os << "neg";
  } else if (const auto *binary = llvm::dyn_cast<BinaryExpr>(&expr)) {
    os << "binary '" << binary->op << "'";
  } else if (llvm::isa<MatVecExpr>(&expr)) {
    os << "mat_vec";
  } else if (const auto *call = llvm::dyn_cast<CallExpr>(&expr)) {
    os << "call " << call->callee;
  }
  shape(expr.shape);
  at(expr.loc);

  if (const auto *unary = llvm::dyn_cast<UnaryExpr>(&expr)) {
    print(*unary->operand, depth + 1);
  } else if (const auto *binary = llvm::dyn_cast<BinaryExpr>(&expr)) {
    print(*binary->lhs, depth + 1);
    print(*binary->rhs, depth + 1);
  } else if (const auto *matVec = llvm::dyn_cast<MatVecExpr>(&expr)) {
    print(*matVec->matrix, depth + 1);
    print(*matVec->vector, depth + 1);
  } else if (const auto *call = llvm::dyn_cast<CallExpr>(&expr)) {
    for (const auto &arg : call->args)
      print(*arg, depth + 1);
  }
}

} // namespace

void cellc::printAST(const ParsedFile &file, llvm::raw_ostream &os) {
  if (file.module)
    ASTPrinter(os).print(*file.module);
}
