//===- models/cws/CommandLine.cpp - cws's options -------------------------===//

#include "models/cws/CommandLine.h"

#include "models/common/CommandLine.h"

namespace cws {

namespace {

using models::option;

const char *formatHelp =
    "auto (CoNLL-U for .conll/.conllu, else segmented), segmented or conllu";

void addScoreCommand(CLI::App &app, ScoreRequest &r) {
  CLI::App *cmd = app.add_subcommand(
      "score", "Word precision, recall, F1 and OOV recall as the SIGHAN "
               "bakeoff's score script");
  cmd->add_option("--gold", r.gold, "the gold segmentation")->required();
  cmd->add_option("--test", r.test, "the segmentation to score")->required();
  cmd->add_option("--words", r.words,
                  "the training word list (or a training corpus) for OOV")
      ->required();
  option(*cmd, "format", r.format, std::string("gold: ") + formatHelp)
      ->check(CLI::IsMember({"auto", "segmented", "conllu"}));
  option(*cmd, "digits", r.digits, "decimals printed (the script prints 3)")
      ->check(CLI::Range(1, 9));
}

void addBaselineCommand(CLI::App &app, BaselineRequest &r) {
  CLI::App *cmd = app.add_subcommand(
      "baseline", "Forward maximum matching with a word list (the bakeoff's "
                  "baseline)");
  cmd->add_option("--words", r.words,
                  "the training word list (or a training corpus)")
      ->required();
  option(*cmd, "input", r.input, "raw text, one sentence per line (default: "
                                 "stdin)");
  option(*cmd, "output", r.output, "segmented text (default: stdout)");
}

} // namespace

std::optional<int> parseCommandLine(int argc, char **argv, CommandLine &cli) {
  CLI::App app("cws: Chinese word segmentation over cellc-compiled cells",
               "cws");
  app.set_version_flag("--version", "cws (cellc) " CELLC_VERSION);
  addScoreCommand(app, cli.score);
  addBaselineCommand(app, cli.baseline);
  for (CLI::App *cmd : app.get_subcommands({}))
    option(*cmd, "threads", cli.threads,
           "OpenMP threads for oneDNN (1 is fastest for small models)");
  if (std::optional<int> exit = models::parseCommands(app, argc, argv))
    return exit;
  cli.command = app.get_subcommands()[0]->get_name();
  return std::nullopt;
}

} // namespace cws
