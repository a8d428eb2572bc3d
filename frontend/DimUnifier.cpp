//===- DimUnifier.cpp - Solving equations between dimensions --------------===//

#include "frontend/DimUnifier.h"

#include "llvm/ADT/STLExtras.h"

#include <optional>

using namespace cellc;

bool cellc::isNeverPositive(const DimExpr &expr) {
  if (expr.getConstant() > 0)
    return false;
  return llvm::all_of(expr.getTerms(),
                      [](const DimExpr::Term &t) { return t.second <= 0; });
}

bool DimUnifier::unify(const DimExpr &a, const DimExpr &b) {
  eliminatedUserDim.reset();
  DimExpr difference = resolve(a) - resolve(b);
  if (difference.isConstant())
    return difference.getConstant() == 0;

  // Solve `difference == 0` for one symbol: prefer a coefficient of +-1
  // (always solvable), else any whose coefficient divides the rest.
  std::optional<DimExpr::Term> chosen;
  std::optional<DimExpr> value;
  for (const DimExpr::Term &term : difference.getTerms()) {
    if (term.second != 1 && term.second != -1)
      continue;
    if (!chosen || eliminateFirst(term.first, chosen->first))
      chosen = term;
  }
  if (chosen) {
    DimExpr rest = difference - DimExpr::symbol(chosen->first, chosen->second);
    value = (rest * -1).divideExactly(chosen->second);
  } else {
    for (const DimExpr::Term &term : difference.getTerms()) {
      DimExpr rest = difference - DimExpr::symbol(term.first, term.second);
      if ((value = (rest * -1).divideExactly(term.second))) {
        chosen = term;
        break;
      }
    }
  }
  if (!chosen || !value || isNeverPositive(*value))
    return false;

  std::map<std::string, DimExpr> solved = {{chosen->first, *value}};
  for (auto &binding : bindings)
    binding.second = binding.second.substitute(solved);
  bindings[chosen->first] = *value;
  if (!fresh.count(chosen->first))
    eliminatedUserDim.emplace(chosen->first, *value);
  return true;
}

