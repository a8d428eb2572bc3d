//===- models/common/CommandLine.cpp - The drivers' CLI11 options ---------===//

#include "models/common/CommandLine.h"
#include "models/common/ConfigFile.h"
#include "models/common/OptionTable.h"
#include "models/common/Team.h"

#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace models {

const CLI::Validator finiteNumber(
    [](std::string &text) -> std::string {
      char *end = nullptr;
      double x = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0')
        return "not a number: '" + text + "'";
      return std::isfinite(x) ? "" : "must be finite, not " + text;
    },
    "FINITE");

const CLI::Validator wholeNumber(
    [](std::string &text) -> std::string {
      char *end = nullptr;
      errno = 0;
      long long x = std::strtoll(text.c_str(), &end, 10);
      if (end == text.c_str() || *end != '\0' || errno == ERANGE)
        return "not a whole number: '" + text + "'";
      return x >= 0 ? "" : "must not be negative, not " + text;
    },
    "N");

namespace {

/// Numbers from `low` to `high` (above `low` when `openLow`), named in the
/// message as `what` ("a learning rate") that must be `rule`; --help shows
/// `shown`. CLI11's own ranges print their bounds with 300 digits.
CLI::Validator numberIn(double low, double high, bool openLow,
                        const std::string &what, const std::string &rule,
                        const std::string &shown) {
  return CLI::Validator(
      [=](std::string &text) -> std::string {
        char *end = nullptr;
        double x = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0')
          return "not a number: '" + text + "'";
        bool in = (openLow ? x > low : x >= low) && x <= high;
        return in ? "" : what + " must be " + rule + ", not " + text;
      },
      shown);
}

} // namespace

const CLI::Validator learningRate =
    numberIn(0, DBL_MAX, true, "a learning rate", "> 0", "POSITIVE");
const CLI::Validator dropoutRate =
    numberIn(0, 0.99, false, "a dropout probability", "in [0, 0.99]",
             "[0 - 0.99]");
const CLI::Validator clipNorm =
    numberIn(0, DBL_MAX, false, "a gradient-norm clip", ">= 0 (0: none)",
             "NONNEGATIVE");
const CLI::Validator positiveCount =
    numberIn(1, 1e9, false, "a count", "a whole number >= 1", "POSITIVE");
const CLI::Validator layerWidth =
    numberIn(1, 65536, false, "a width", "from 1 to 65536", "[1 - 65536]");

void Opt::checkText(std::string text) const {
  for (const CLI::Validator &validator : checks_) {
    std::string error = validator(text);
    if (!error.empty())
      throw DataError("--" + name_ + ": " + error);
  }
}

std::optional<int> parseCommands(CLI::App &app, int argc, char **argv) {
  const std::string &name = app.get_name();
  app.require_subcommand(1);
  std::string list;
  bool known = false;
  // Every command reads --config FILE and writes --print-config.
  std::vector<std::unique_ptr<CommandConfig>> configs;
  for (CLI::App *cmd : app.get_subcommands({})) {
    list += (list.empty() ? "" : ", ") + cmd->get_name();
    known = known || (argc > 1 && cmd->get_name() == argv[1]);
    configs.push_back(std::make_unique<CommandConfig>(*cmd));
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr,
                 "%s: error: unknown command '%s' (commands: %s; see %s "
                 "--help)\n",
                 name.c_str(), argv[1], list.c_str(), name.c_str());
    return 2;
  }
  auto usageError = [&](const CLI::ParseError &error) {
    std::string command = app.get_subcommands().empty()
                              ? ""
                              : " " + app.get_subcommands()[0]->get_name();
    std::fprintf(stderr, "%s: error: %s\nrun '%s%s --help' for the options\n",
                 name.c_str(), error.what(), name.c_str(), command.c_str());
    return 2;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    for (auto &config : configs)
      config->restoreRequired();
    if (error.get_exit_code() == 0)
      return app.exit(error);
    return usageError(error);
  }
  CLI::App *given = app.get_subcommands()[0];
  for (auto &config : configs) {
    if (&config->command() != given)
      continue;
    try {
      config->finish();
    } catch (const CLI::ParseError &error) {
      return usageError(error);
    }
    if (config->printRequested()) {
      std::fputs(config->text().c_str(), stdout);
      return 0;
    }
  }
  return std::nullopt;
}

int runCommand(const std::string &program,
               const std::function<int()> &command) {
  // Under mpirun: start MPI and quiet the other ranks before any output.
  Team &team = Team::world();
  try {
    return command();
  } catch (const std::exception &error) {
    std::fprintf(team.errors(), "%s: error%s: %s\n", program.c_str(),
                 team.where().c_str(), error.what());
    // Under mpirun the other ranks would wait for this one forever.
    std::fflush(team.errors());
    team.abortAll(1);
    return 1;
  }
}

} // namespace models
