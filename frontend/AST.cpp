//===- AST.cpp - Abstract syntax tree of .cell files ----------------------===//

#include "frontend/AST.h"

using namespace cellc;
using namespace cellc::ast;

Expr::~Expr() = default;

std::string Shape::str() const {
  switch (kind) {
  case Kind::Invalid:
    return "<invalid>";
  case Kind::Scalar:
    return "scalar";
  case Kind::Vector:
  case Kind::Matrix:
    break;
  }
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + dims[i].str();
  return text + "]";
}
