//===- InitScheme.cpp - Names, text and rules of param initialisers -------===//

#include "cellrt/InitScheme.h"

#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdlib>

using namespace cellrt;
using Kind = InitScheme::Kind;

namespace {

constexpr std::pair<Kind, const char *> kNames[] = {
    {Kind::None, "none"},
    {Kind::Constant, "constant"},
    {Kind::Uniform, "uniform"},
    {Kind::Normal, "normal"},
    {Kind::Orthogonal, "orthogonal"},
    {Kind::FanIn, "fan_in"},
    {Kind::FanOut, "fan_out"},
};

bool isFiniteFloat32(double value) {
  return std::isfinite(value) && std::fabs(value) <= FLT_MAX;
}

} // namespace

const char *cellrt::initKindName(Kind kind) {
  for (auto [k, name] : kNames)
    if (k == kind)
      return name;
  return "none";
}

std::optional<Kind> cellrt::parseInitKind(std::string_view name) {
  for (auto [kind, text] : kNames)
    if (name == text)
      return kind;
  return std::nullopt;
}

std::vector<std::string> cellrt::drawnInitKindNames() {
  std::vector<std::string> names;
  for (auto [kind, name] : kNames)
    if (kind != Kind::None && kind != Kind::Constant)
      names.push_back(name);
  return names;
}

bool cellrt::initKindTakesValue(Kind kind) {
  return kind == Kind::Constant || kind == Kind::Uniform ||
         kind == Kind::Normal;
}

const char *cellrt::initValueRole(Kind kind) {
  switch (kind) {
  case Kind::Uniform:
    return "bound";
  case Kind::Normal:
    return "standard deviation";
  default:
    return "value";
  }
}

std::string cellrt::checkInitValue(const InitScheme &scheme) {
  std::string name = initKindName(scheme.kind);
  if (!initKindTakesValue(scheme.kind))
    return scheme.value == 0 ? "" : "'" + name + "' takes no argument";
  if (!isFiniteFloat32(scheme.value))
    return std::string("the ") + initValueRole(scheme.kind) + " of '" + name +
           "' is not a finite float32: " + formatInitValue(scheme.value);
  // A zero bound or deviation draws only zeros: say `= 0` instead.
  if (scheme.kind != Kind::Constant && !(scheme.value > 0))
    return std::string("the ") + initValueRole(scheme.kind) + " of '" + name +
           "' must be positive, got " + formatInitValue(scheme.value);
  return "";
}

std::string cellrt::checkInitRank(const InitScheme &scheme, size_t rank) {
  if (scheme.kind == Kind::Orthogonal && rank != 2)
    return "'orthogonal' needs a matrix param [R, C], not a vector";
  return "";
}

std::string cellrt::formatInitValue(double value) {
  char text[32];
  auto result = std::to_chars(text, text + sizeof text, value);
  return std::string(text, result.ptr);
}

std::string InitScheme::str() const {
  std::string text = initKindName(kind);
  if (initKindTakesValue(kind))
    text += " " + formatInitValue(value);
  return text;
}

std::optional<InitScheme> InitScheme::parse(std::string_view text) {
  size_t space = text.find(' ');
  std::optional<Kind> kind = parseInitKind(text.substr(0, space));
  if (!kind)
    return std::nullopt;
  InitScheme scheme{*kind, 0};
  if (initKindTakesValue(*kind) != (space != std::string_view::npos))
    return std::nullopt;
  if (space != std::string_view::npos) {
    std::string_view number = text.substr(space + 1);
    auto result = std::from_chars(number.data(), number.data() + number.size(),
                                  scheme.value);
    if (result.ec != std::errc() || result.ptr != number.data() + number.size())
      return std::nullopt;
  }
  if (!checkInitValue(scheme).empty())
    return std::nullopt;
  return scheme;
}

std::optional<InitScheme> InitScheme::parseWritten(std::string_view text) {
  size_t open = text.find('(');
  if (open == std::string_view::npos)
    return parse(text);
  if (text.back() != ')')
    return std::nullopt;
  std::string_view inside = text.substr(open + 1, text.size() - open - 2);
  std::string plain(text.substr(0, open));
  if (!inside.empty())
    plain += " " + std::string(inside);
  return parse(plain);
}
