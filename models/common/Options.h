//===- models/common/Options.h - The drivers' options ----------*- C++ -*-===//
//
// What every driver's CLI11 options share: numbers are checked (finite
// floats, whole numbers >= 0) with messages naming the value, defaults are
// shown in --help, and the last of a repeated option wins, as scripts
// override a base list.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_OPTIONS_H
#define CELLC_MODELS_COMMON_OPTIONS_H

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>

namespace models {

/// Rejects nan and inf, which every numeric range check lets through.
inline const CLI::Validator finite(
    [](std::string &text) -> std::string {
      char *end = nullptr;
      double x = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0')
        return "not a number: '" + text + "'";
      return std::isfinite(x) ? "" : "must be finite, not " + text;
    },
    "FINITE");

/// Whole numbers >= 0 (CLI11's own range check prints a 300-digit bound).
inline const CLI::Validator count(
    [](std::string &text) -> std::string {
      char *end = nullptr;
      errno = 0;
      long long x = std::strtoll(text.c_str(), &end, 10);
      if (end == text.c_str() || *end != '\0' || errno == ERANGE)
        return "not a whole number: '" + text + "'";
      return x >= 0 ? "" : "must not be negative, not " + text;
    },
    "N");

template <typename T>
CLI::Option *option(CLI::App &cmd, const std::string &name, T &field,
                    const std::string &help) {
  CLI::Option *opt = cmd.add_option("--" + name, field, help);
  opt->capture_default_str();
  // The last of a repeated option wins, as scripts override a base list.
  opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  if constexpr (std::is_floating_point_v<T>)
    opt->check(finite);
  if constexpr (std::is_integral_v<T>)
    opt->check(count);
  return opt;
}

} // namespace models

#endif
