//===- models/common/Driver.cpp - One main for every driver ---------------===//

#include "models/common/Driver.h"

#include "models/common/Math.h"
#include "models/common/OpenMpWaits.h"

#include <cstdio>

namespace models {

int driverMain(int argc, char **argv, const DriverInfo &info,
               const std::vector<DriverCommand> &commands) {
  useOneThreadTeam(argv);
  CLI::App app(info.about, info.program);
  app.set_version_flag("--version", info.program + " (cellc) " + info.version);
  // One thread is the fastest at the seed models' sizes, and far faster on
  // a machine that is busy with other runs.
  int64_t threads = 1;
  std::vector<CLI::App *> subcommands;
  for (const DriverCommand &command : commands) {
    CLI::App *cmd = app.add_subcommand(command.name, command.about);
    command.addOptions(*cmd);
    option(*cmd, "threads", threads,
           "OpenMP threads for oneDNN and the cells (0: OpenMP's default, "
           "every core)");
    subcommands.push_back(cmd);
  }
  if (std::optional<int> exit = parseCommands(app, argc, argv))
    return *exit;
  for (size_t i = 0; i < commands.size(); ++i) {
    if (!subcommands[i]->parsed())
      continue;
    const DriverCommand &command = commands[i];
    if (command.check) {
      std::string error = command.check();
      if (!error.empty()) {
        std::fprintf(stderr, "%s: error: %s\n", info.program.c_str(),
                     error.c_str());
        return 2;
      }
    }
    if (threads > 0)
      setThreads(int(threads));
    return runCommand(info.program,
                      [&] { return command.run(*subcommands[i]); });
  }
  return 2; // parseCommands requires one command
}

} // namespace models
