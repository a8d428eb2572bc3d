//===- models/common/ConfigFile.h - A command's options in a file -*- C++
//-*-===//
//
// Every command of every driver reads its options from a TOML file too, as
// Marian's `-c x.yml` and OpenNMT-py's `-config` do: `nmt train --config
// run.toml`, the long option names as keys:
//
//   cell = "gru"
//   max-updates = 20
//   no-progress = true
//   model = ["a.ckpt", "b.ckpt"]
//
// An option given on the command line overrides the file's. A file that
// cannot be read, a key that is no option of the command, and a value the
// option refuses are errors naming the file and the key. `--print-config`
// writes every option of the command with its value, defaults included, in
// that format and exits, so `nmt train ... --print-config > run.toml` and
// then `nmt train --config run.toml` repeat the run.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_CONFIGFILE_H
#define CELLC_MODELS_COMMON_CONFIGFILE_H

#include <CLI/CLI.hpp>

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace models {

/// --config and --print-config of one command (a CLI11 subcommand). Made
/// before the command line is parsed: a required option may come from the
/// file, so requirements are checked by finish(), after the file is read.
class CommandConfig {
public:
  /// Adds --config FILE and --print-config to `cmd`, notes the defaults of
  /// its options, and leaves their requirements to finish().
  explicit CommandConfig(CLI::App &cmd);

  /// Gives the options back their requirements (for --help, or when the
  /// command was not the one given).
  void restoreRequired();

  /// After the command line is parsed: reads --config FILE into the
  /// options the command line did not give (they count as given, as on the
  /// command line), then checks the required ones, unless --print-config
  /// was asked for. Throws a CLI::ParseError naming the file and the key.
  void finish();

  CLI::App &command() const { return cmd; }

  /// Whether --print-config was given.
  bool printRequested() const;

  /// Every option of the command with its value (given on the command line,
  /// else in --config's file, else its default), as a TOML file --config
  /// reads back.
  std::string text() const;

private:
  /// The options a file may set, with their keys.
  std::vector<std::pair<std::string, CLI::Option *>> keyed() const;
  std::vector<std::string> valuesOf(const CLI::Option *opt) const;
  void writeOption(std::ostream &out, const std::string &key,
                   const CLI::Option *opt) const;

  CLI::App &cmd;
  CLI::Option *configOption, *printOption;
  std::vector<CLI::Option *> required;
  std::map<const CLI::Option *, std::string> defaults;
};

/// `text` as a TOML string.
std::string tomlString(const std::string &text);

} // namespace models

#endif
