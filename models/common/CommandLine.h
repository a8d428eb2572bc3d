//===- models/common/CommandLine.h - The drivers' CLI11 options -*- C++ -*-===//
//
// What every driver's command line shares: one CLI11 subcommand per command,
// numeric options that reject nan, inf and malformed counts with a message
// naming the option, the last of a repeated option winning, and errors
// printed as `PROGRAM: error: ...` with exit code 2.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_COMMANDLINE_H
#define CELLC_MODELS_COMMON_COMMANDLINE_H

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <type_traits>

namespace models {

/// Rejects nan and inf, which every numeric range check lets through.
extern const CLI::Validator finiteNumber;
/// Whole numbers >= 0 (CLI11's own range check prints a 300-digit bound).
extern const CLI::Validator wholeNumber;

/// The options every driver shares are checked by one rule each, so a
/// value means the same in nmt, nli and cws and is refused the same way.
/// A learning rate: > 0.
extern const CLI::Validator learningRate;
/// A dropout probability: in [0, 0.99] (1 would drop everything).
extern const CLI::Validator dropoutRate;
/// A gradient-norm clip: >= 0 (0: none).
extern const CLI::Validator clipNorm;
/// A count that must be at least 1 (a batch, an epoch count).
extern const CLI::Validator positiveCount;
/// A layer's width: 1 to 65536 (wider would not fit in memory anyway and
/// would only fail later as an allocation error naming nothing).
extern const CLI::Validator layerWidth;

/// `--NAME` bound to `field`, its default shown in --help; numbers are
/// checked with finiteNumber or wholeNumber.
template <typename T>
CLI::Option *option(CLI::App &cmd, const std::string &name, T &field,
                    const std::string &help) {
  CLI::Option *opt = cmd.add_option("--" + name, field, help);
  opt->capture_default_str();
  // The last of a repeated option wins, as scripts override a base list.
  opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  if constexpr (std::is_floating_point_v<T>)
    opt->check(finiteNumber);
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
    opt->check(wholeNumber);
  return opt;
}

/// Parses argv with `app`, whose subcommands are the commands (exactly one
/// is required). Every command also gets --config FILE and --print-config
/// (ConfigFile.h). Returns the exit code when the program must stop here: 0
/// after --help, --version or --print-config, 2 after a usage error,
/// printed as `NAME: error: ...` with a hint to run --help (an unknown
/// command is named as such; an error in --config's file names the file
/// and the key).
std::optional<int> parseCommands(CLI::App &app, int argc, char **argv);

/// Runs a parsed command: an exception is printed as `PROGRAM: error: ...`
/// and gives exit code 1.
int runCommand(const std::string &program, const std::function<int()> &command);

} // namespace models

#endif
