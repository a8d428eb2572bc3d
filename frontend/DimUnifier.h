//===- DimUnifier.h - Solving equations between dimensions ------*- C++ -*-===//
//
// Sema's shape checking equates dimension expressions (`I == H` from SRU's
// `(1-r)*x`, `3*H == D` from a split); this solves them by substitution.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_FRONTEND_DIMUNIFIER_H
#define CELLC_FRONTEND_DIMUNIFIER_H

#include "cellrt/DimExpr.h"

#include <map>
#include <optional>
#include <set>
#include <string>

namespace cellc {

/// Whether `expr` can only be zero or negative when every symbol is >= 1.
bool isNeverPositive(const DimExpr &expr);

/// Solves equations between dimension expressions by substitution. The
/// bindings are kept fully resolved: no bound symbol occurs in a binding.
class DimUnifier {
public:
  explicit DimUnifier(const std::map<std::string, int64_t> &fixedDims) {
    for (const auto &[name, value] : fixedDims)
      bindings[name] = DimExpr::constant(value);
  }

  /// Records the order symbols first appear in. Unification eliminates
  /// fresh symbols first, then the earliest declared ones, so SRU's I = H
  /// reads as `[H]` everywhere (the state and weights keep their names).
  void noteSymbol(const std::string &name) { rank.emplace(name, rank.size()); }

  DimExpr resolve(const DimExpr &expr) const {
    return expr.substitute(bindings);
  }

  /// Adds `a == b`; returns false and changes nothing on a contradiction.
  bool unify(const DimExpr &a, const DimExpr &b);

  /// The dimension the user wrote that the last `unify` eliminated (`I`
  /// in `I == H`), with its value: two names the researcher meant as two
  /// sizes that an expression forces to be one.
  const std::optional<std::pair<std::string, DimExpr>> &
  lastEliminatedUserDim() const {
    return eliminatedUserDim;
  }

  /// A symbol named after `base` that occurs nowhere yet.
  std::string freshSymbol(const std::string &base) {
    std::string name = base;
    for (unsigned i = 2; rank.count(name) || bindings.count(name); ++i)
      name = base + "_" + std::to_string(i);
    rank.emplace(name, rank.size());
    fresh.insert(name);
    return name;
  }

  std::map<std::string, DimExpr> bindings;

private:
  /// Whether to eliminate `a` rather than `b`.
  bool eliminateFirst(const std::string &a, const std::string &b) const {
    bool freshA = fresh.count(a), freshB = fresh.count(b);
    if (freshA != freshB)
      return freshA;
    auto rankA = rank.find(a), rankB = rank.find(b);
    unsigned ra = rankA == rank.end() ? ~0u : rankA->second;
    unsigned rb = rankB == rank.end() ? ~0u : rankB->second;
    return ra < rb;
  }
  std::map<std::string, unsigned> rank;
  std::set<std::string> fresh;
  std::optional<std::pair<std::string, DimExpr>> eliminatedUserDim;
};


} // namespace cellc

#endif // CELLC_FRONTEND_DIMUNIFIER_H
