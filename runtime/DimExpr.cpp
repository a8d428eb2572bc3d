//===- DimExpr.cpp - Symbolic dimension expressions -----------------------===//

#include "cellrt/DimExpr.h"

#include <algorithm>
#include <cctype>
#include <limits>

using namespace cellc;

// Real dimensions are far below 2^63, but a .cell file, a --dim value or a
// chain of unifications can name absurd ones. Arithmetic saturates at
// +-kSaturated instead of overflowing (undefined behaviour), so an absurd
// dimension stays absurdly large and the front end rejects it. INT64_MIN is
// never produced, so negating a value is always defined.
static constexpr int64_t kSaturated = std::numeric_limits<int64_t>::max();

static int64_t clamped(int64_t value) { return std::max(value, -kSaturated); }

static int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum))
    return a > 0 ? kSaturated : -kSaturated;
  return clamped(sum);
}

static int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t product;
  if (__builtin_mul_overflow(a, b, &product))
    return (a < 0) != (b < 0) ? -kSaturated : kSaturated;
  return clamped(product);
}

DimExpr DimExpr::constant(int64_t value) {
  DimExpr e;
  e.constantPart = clamped(value);
  return e;
}

DimExpr DimExpr::symbol(const std::string &name, int64_t coefficient) {
  DimExpr e;
  e.terms.push_back({name, clamped(coefficient)});
  e.normalize();
  return e;
}

void DimExpr::normalize() {
  std::sort(terms.begin(), terms.end());
  std::vector<Term> merged;
  for (const Term &t : terms) {
    if (!merged.empty() && merged.back().first == t.first)
      merged.back().second = saturatingAdd(merged.back().second, t.second);
    else
      merged.push_back(t);
  }
  merged.erase(std::remove_if(merged.begin(), merged.end(),
                              [](const Term &t) { return t.second == 0; }),
               merged.end());
  terms = std::move(merged);
}

std::optional<DimExpr> DimExpr::parse(const std::string &text) {
  DimExpr result;
  size_t pos = 0, n = text.size();
  if (n == 0)
    return std::nullopt;
  while (pos < n) {
    int64_t sign = 1;
    if (text[pos] == '+' || text[pos] == '-') {
      sign = text[pos] == '-' ? -1 : 1;
      ++pos;
    } else if (pos != 0) {
      return std::nullopt;
    }
    if (pos >= n)
      return std::nullopt;
    int64_t number = 1;
    bool hasNumber = false;
    if (std::isdigit(static_cast<unsigned char>(text[pos]))) {
      number = 0;
      while (pos < n && std::isdigit(static_cast<unsigned char>(text[pos]))) {
        if (__builtin_mul_overflow(number, 10, &number) ||
            __builtin_add_overflow(number, text[pos++] - '0', &number))
          return std::nullopt;
      }
      hasNumber = true;
      if (pos < n && text[pos] == '*')
        ++pos;
      else {
        result.constantPart = saturatingAdd(result.constantPart, sign * number);
        continue;
      }
    }
    if (pos >= n ||
        !(std::isalpha(static_cast<unsigned char>(text[pos])) ||
          text[pos] == '_'))
      return std::nullopt;
    size_t start = pos;
    while (pos < n && (std::isalnum(static_cast<unsigned char>(text[pos])) ||
                       text[pos] == '_'))
      ++pos;
    result.terms.push_back(
        {text.substr(start, pos - start), sign * (hasNumber ? number : 1)});
  }
  result.normalize();
  return result;
}

DimExpr DimExpr::operator+(const DimExpr &other) const {
  DimExpr r = *this;
  r.constantPart = saturatingAdd(r.constantPart, other.constantPart);
  r.terms.insert(r.terms.end(), other.terms.begin(), other.terms.end());
  r.normalize();
  return r;
}

DimExpr DimExpr::operator-(const DimExpr &other) const {
  return *this + other * -1;
}

DimExpr DimExpr::operator*(int64_t factor) const {
  DimExpr r = *this;
  r.constantPart = saturatingMul(r.constantPart, factor);
  for (Term &t : r.terms)
    t.second = saturatingMul(t.second, factor);
  r.normalize();
  return r;
}

bool DimExpr::operator==(const DimExpr &other) const {
  return constantPart == other.constantPart && terms == other.terms;
}

std::optional<DimExpr> DimExpr::divideExactly(int64_t divisor) const {
  if (divisor == 0 || constantPart % divisor != 0)
    return std::nullopt;
  DimExpr r = *this;
  r.constantPart /= divisor;
  for (Term &t : r.terms) {
    if (t.second % divisor != 0)
      return std::nullopt;
    t.second /= divisor;
  }
  return r;
}

DimExpr
DimExpr::substitute(const std::map<std::string, DimExpr> &bindings) const {
  DimExpr r = constant(constantPart);
  for (const Term &t : terms) {
    auto it = bindings.find(t.first);
    if (it == bindings.end())
      r = r + symbol(t.first, t.second);
    else
      r = r + it->second * t.second;
  }
  return r;
}

std::optional<int64_t>
DimExpr::evaluate(const std::map<std::string, int64_t> &sizes) const {
  int64_t value = constantPart;
  for (const Term &t : terms) {
    auto it = sizes.find(t.first);
    if (it == sizes.end())
      return std::nullopt;
    value = saturatingAdd(value, saturatingMul(t.second, it->second));
  }
  return value;
}

std::string DimExpr::str() const {
  std::string out;
  for (const Term &t : terms) {
    int64_t c = t.second;
    if (!out.empty() || c < 0)
      out += c < 0 ? "-" : "+";
    int64_t magnitude = c < 0 ? -c : c;
    if (magnitude != 1)
      out += std::to_string(magnitude) + "*";
    out += t.first;
  }
  if (constantPart != 0 || out.empty()) {
    if (!out.empty())
      out += constantPart < 0 ? "-" : "+";
    else if (constantPart < 0)
      out += "-";
    out += std::to_string(constantPart < 0 ? -constantPart : constantPart);
  }
  return out;
}
