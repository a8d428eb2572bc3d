//===- models/common/Driver.h - One main for every driver -------*- C++ -*-===//
//
// What nmt, nli and cws share above their models: a program of commands
// (`nmt train`, `nmt translate`, ...), each a CLI11 subcommand with --help,
// --config FILE, --print-config and --threads; errors printed as
// `PROGRAM: error: ...` (exit code 2 for a usage error, 1 for a failure);
// and a `train` command whose options are the driver's option table
// (OptionTable.h), with --resume, --resume-from and --force, run under the
// run's lock and resumed by RunStart.h's rules. A driver's main is its
// list of commands:
//
//   int main(int argc, char **argv) {
//     return models::driverMain(
//         argc, argv, {"cws", "cws: ...", CELLC_VERSION},
//         {models::trainCommand("Train a segmenter", cws::runRules()),
//          models::requestCommand("score", "Score a segmentation",
//                                 addScoreOptions, score)});
//   }
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_DRIVER_H
#define CELLC_MODELS_COMMON_DRIVER_H

#include "models/common/OptionTable.h"
#include "models/common/RunLock.h"
#include "models/common/RunStart.h"
#include "models/common/Team.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace models {

/// One command of a driver.
struct DriverCommand {
  std::string name, about;
  /// Adds the command's options to its CLI11 subcommand.
  std::function<void(CLI::App &)> addOptions;
  /// Runs the parsed command, given its subcommand; an exception is an
  /// error (exit code 1).
  std::function<int(const CLI::App &)> run;
  /// After parsing: a non-empty message is a usage error (exit code 2),
  /// for rules that tie options together.
  std::function<std::string()> check = {};
};

/// A command whose options fill a request of its own, which its run reads
/// (`cws score`: a ScoreRequest, addScoreOptions, score); `check`, when
/// given, ties options together (DriverCommand::check).
template <class Request>
DriverCommand requestCommand(const std::string &name, const std::string &about,
                             void (*addOptions)(CLI::App &, Request &),
                             int (*run)(const Request &),
                             std::string (*check)(const Request &) = nullptr) {
  auto request = std::make_shared<Request>();
  DriverCommand command{
      name, about,
      [request, addOptions](CLI::App &cmd) { addOptions(cmd, *request); },
      [request, run](const CLI::App &) { return run(*request); }};
  if (check)
    command.check = [request, check] { return check(*request); };
  return command;
}

/// The program: its name, the first line of its --help, its version.
struct DriverInfo {
  std::string program, about, version;
};

/// Parses the command line (exactly one command; every command also takes
/// --threads N, default 1), sets the threads and runs the command.
int driverMain(int argc, char **argv, const DriverInfo &info,
               const std::vector<DriverCommand> &commands);

/// Adds --resume, --resume-from and --force, which every driver's train
/// command takes, to `cmd`.
template <class Options>
void addResumeOptions(CLI::App &cmd, RunRequest<Options> &request) {
  const char *group = "Resume";
  cmd.add_flag("--resume", request.resume,
               "continue OUT (or OUT.best) exactly where it stopped, with "
               "its options")
      ->group(group);
  cmd.add_option("--resume-from", request.resumeFrom,
                 "continue this checkpoint, writing OUT (a run of its own)")
      ->group(group);
  cmd.add_flag("--force", request.force, "overwrite another run's checkpoint")
      ->group(group);
}

/// The `train` command of a driver: the options of its table plus the
/// resume options; trains the session `rules` prepares.
template <class Session, class Options, class Data>
DriverCommand trainCommand(const std::string &about,
                           const RunRules<Session, Options, Data> &rules) {
  auto request = std::make_shared<RunRequest<Options>>();
  DriverCommand command;
  command.name = "train";
  command.about = about;
  command.addOptions = [request](CLI::App &cmd) {
    addOptionTable(cmd, request->options);
    addResumeOptions(cmd, *request);
  };
  command.run = [request, rules](const CLI::App &cmd) {
    request->given = givenTableOptions<Options>(cmd);
    // One writer per run (RunLock.h): rank 0 writes its files.
    std::optional<RunLock> lock;
    if (Team::world().leader())
      lock.emplace(rules.program, request->options.out);
    Data data;
    std::unique_ptr<Session> session = prepareTraining(rules, *request, data);
    if (session)
      session->train(data);
    return 0;
  };
  return command;
}

} // namespace models

#endif
