//===- DimExpr.h - Symbolic dimension expressions ---------------*- C++ -*-===//
//
// A dimension in a cell's shapes is a linear expression over symbolic
// dimensions: `H`, `512`, `3*H`, `2*H+I`. The front end unifies them, the
// dialect carries them in types (`!cell.vec<"3*H">`) and the runtime
// evaluates them once it knows the sizes. It is part of the runtime's
// installed interface (the plan's shapes are DimExprs) and has no MLIR
// dependency; the compiler uses it too.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_DIMEXPR_H
#define CELLRT_DIMEXPR_H

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cellc {

/// constant + sum(coefficient * symbol), kept canonical: terms sorted by
/// symbol name, no zero coefficients. Arithmetic saturates at +-(2^63 - 1)
/// instead of overflowing; the front end rejects dimensions that large.
class DimExpr {
public:
  using Term = std::pair<std::string, int64_t>;

  DimExpr() = default;
  static DimExpr constant(int64_t value);
  static DimExpr symbol(const std::string &name, int64_t coefficient = 1);
  /// Parses the printed form (`3*H+I+2`); std::nullopt on malformed text.
  static std::optional<DimExpr> parse(const std::string &text);

  int64_t getConstant() const { return constantPart; }
  const std::vector<Term> &getTerms() const { return terms; }
  bool isConstant() const { return terms.empty(); }

  DimExpr operator+(const DimExpr &other) const;
  DimExpr operator-(const DimExpr &other) const;
  DimExpr operator*(int64_t factor) const;
  bool operator==(const DimExpr &other) const;
  bool operator!=(const DimExpr &other) const { return !(*this == other); }
  /// Exact division by an integer, if every coefficient is divisible.
  std::optional<DimExpr> divideExactly(int64_t divisor) const;

  /// Replaces symbols that have a binding by their (expression) values.
  DimExpr substitute(const std::map<std::string, DimExpr> &bindings) const;
  /// The value for concrete symbol sizes; std::nullopt if a symbol is unbound.
  std::optional<int64_t>
  evaluate(const std::map<std::string, int64_t> &sizes) const;

  /// Canonical text, e.g. `3*H+I+2`; `0` for the zero expression.
  std::string str() const;

private:
  void normalize();
  int64_t constantPart = 0;
  std::vector<Term> terms;
};

} // namespace cellc

#endif // CELLRT_DIMEXPR_H
