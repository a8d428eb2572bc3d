//===- models/cws/CommandLine.cpp - cws's options -------------------------===//

#include "models/cws/CommandLine.h"

#include "models/common/Cells.h"
#include "models/common/CommandLine.h"

namespace cws {

namespace {

using models::cellOptionHelp;
using models::givenOptions;
using models::option;

const char *formatHelp =
    "auto (CoNLL-U for .conll/.conllu, else segmented), segmented or conllu";
const char *inputFormatHelp = "auto (CoNLL-U for .conll/.conllu, else raw), "
                              "raw, segmented or conllu";

void addTrainData(CLI::App &cmd, TrainOptions &o) {
  const char *group = "Data";
  option(cmd, "train", o.train, "gold segmentation to learn from")
      ->group(group);
  option(cmd, "valid", o.valid,
         "gold segmentation to validate on (default: the last "
         "--valid-fraction of --train)")
      ->group(group);
  option(cmd, "valid-fraction", o.validFraction,
         "held out of --train without --valid")
      ->check(CLI::Range(0.0, 1.0))
      ->group(group);
  option(cmd, "format", o.format, formatHelp)
      ->check(CLI::IsMember({"auto", "segmented", "conllu"}))
      ->group(group);
  option(cmd, "dict", o.dict,
         "word list (or corpus) whose words become per-character input "
         "features (default: none, the paper's model)")
      ->group(group);
  option(cmd, "dict-dropout", o.dictDropout,
         "training hides each listed gold word from --dict with this "
         "probability, as new text has unlisted words")
      ->check(CLI::Range(0.0, 1.0))
      ->group(group);
  option(cmd, "min-count", o.minCount,
         "rarer training characters are <unk>, as unseen ones")
      ->check(CLI::PositiveNumber)
      ->group(group);
}

void addTrainModel(CLI::App &cmd, TrainOptions &o) {
  const char *group = "Model";
  option(cmd, "cell", o.cell, cellOptionHelp())
      ->group(group);
  option(cmd, "emb", o.emb, "character embedding width")
      ->check(models::layerWidth)
      ->group(group);
  option(cmd, "hidden", o.hidden, "state width of each direction")
      ->check(models::layerWidth)
      ->group(group);
  option(cmd, "layers", o.layers, "stacked bidirectional layers")
      ->check(CLI::Range(1, 8))
      ->group(group);
  option(cmd, "between-layers", o.betweenLayers,
         "what a layer reads of the layer below: tanh of its states, or raw "
         "(an ATR state is unbounded; raw: before 2026-11-28)")
      ->check(CLI::IsMember({"tanh", "raw"}))
      ->group(group);
  option(cmd, "dropout", o.dropout,
         "on the embeddings and before the emission scores")
      ->check(models::dropoutRate)
      ->group(group);
  option(cmd, "loss", o.loss, "max-margin (the paper's) or nll")
      ->check(CLI::IsMember({"max-margin", "nll"}))
      ->group(group);
  option(cmd, "margin", o.margin, "max-margin cost of each wrong tag")
      ->check(CLI::Range(0.0, 100.0))
      ->group(group);
  option(cmd, "init", o.init,
         "how a param without an initialiser in its cell file starts: paper "
         "(uniform +-init-scale) or fan_in (uniform +-1/sqrt(columns))")
      ->check(CLI::IsMember({"paper", "fan_in"}))
      ->group(group);
  option(cmd, "init-scale", o.initScale, "uniform initialisation range")
      ->check(CLI::Range(0.0, 10.0))
      ->group(group);
}

void addTrainOptimizer(CLI::App &cmd, TrainOptions &o) {
  const char *group = "Training";
  option(cmd, "lr", o.lr, "Adam's learning rate")
      ->check(models::learningRate)
      ->group(group);
  option(cmd, "lr-decay", o.lrDecay, "learning rate factor per epoch")
      ->check(CLI::Range(0.0, 1.0))
      ->group(group);
  option(cmd, "clip", o.clip, "gradient norm clip (0: none)")
      ->check(models::clipNorm)
      ->group(group);
  option(cmd, "batch", o.batch, "sentences per update")
      ->check(CLI::Range(1, 100000))
      ->group(group);
  option(cmd, "epochs", o.epochs, "epochs")
      ->check(models::positiveCount)
      ->group(group);
  option(cmd, "seed", o.seed, "initialisation, batch order and dropout")
      ->group(group);
}

void addTrainCommand(CLI::App &app, TrainRequest &r) {
  CLI::App *cmd = app.add_subcommand(
      "train", "Train a segmenter: character BiRNN + CRF (max-margin)");
  TrainOptions &o = r.options;
  addTrainData(*cmd, o);
  addTrainModel(*cmd, o);
  addTrainOptimizer(*cmd, o);
  const char *group = "Output";
  option(*cmd, "out", o.out, "checkpoint (OUT.best: best validation F1)")
      ->group(group);
  option(*cmd, "log", o.log, "log file (default OUT.log)")->group(group);
  option(*cmd, "save-every", o.saveEvery,
         "also save OUT every N updates (0: after each epoch only)")
      ->group(group);
  cmd->add_flag("--resume", r.resume,
                "continue OUT (or OUT.best) exactly where it stopped")
      ->group(group);
  cmd->add_flag("--force", r.force, "overwrite another run's checkpoint")
      ->group(group);
  cmd->add_flag_function(
         "--no-progress", [&o](int64_t count) { o.progress = count <= 0; },
         "no progress output on stderr")
      ->group(group);
}

void addSegmentCommand(CLI::App &app, SegmentRequest &r) {
  CLI::App *cmd = app.add_subcommand(
      "segment", "Segment text, one sentence per line, into words "
                 "separated by two spaces");
  cmd->add_option("--model", r.model, "checkpoint")->required();
  option(*cmd, "input", r.input,
         "raw text (default: stdin), or a CoNLL-U file's sentences");
  option(*cmd, "output", r.output, "segmented text (default: stdout)");
  option(*cmd, "format", r.format, inputFormatHelp)
      ->check(CLI::IsMember({"auto", "raw", "segmented", "conllu"}));
  option(*cmd, "batch", r.batch, "sentences per batch")
      ->check(CLI::Range(1, 100000));
}

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
  option(*cmd, "input", r.input,
         "raw text, one sentence per line (default: stdin), or a CoNLL-U "
         "file's sentences");
  option(*cmd, "output", r.output, "segmented text (default: stdout)");
  option(*cmd, "format", r.format, inputFormatHelp)
      ->check(CLI::IsMember({"auto", "raw", "segmented", "conllu"}));
}

} // namespace

std::optional<int> parseCommandLine(int argc, char **argv, CommandLine &cli) {
  CLI::App app("cws: Chinese word segmentation over cellc-compiled cells",
               "cws");
  app.set_version_flag("--version", "cws (cellc) " CELLC_VERSION);
  addTrainCommand(app, cli.train);
  addSegmentCommand(app, cli.segment);
  addScoreCommand(app, cli.score);
  addBaselineCommand(app, cli.baseline);
  if (std::optional<int> exit = models::parseDriverCommands(
          app, argc, argv, cli.threads,
          "OpenMP threads for oneDNN (0: OpenMP's default; one is fastest "
          "at these sizes, and far faster on a busy machine)",
          cli.command))
    return exit;
  if (cli.command == "train")
    cli.train.given =
        givenOptions(*app.get_subcommand("train"), TrainOptions().toMap());
  return std::nullopt;
}

} // namespace cws
