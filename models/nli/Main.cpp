//===- models/nli/Main.cpp - The nli command ------------------------------===//
//
//   nli train --train DATA/snli/train_small --valid DATA/snli/dev [options]
//   nli eval --model CKPT --data DATA/snli/dev
//   nli predict --model CKPT --input pairs.tsv    (premise TAB hypothesis)
//
// A split is a path without its file parts: DIR/dev reads SNLI's
// DIR/{s1,s2,labels}.dev or SICK's DIR/dev.tsv.
//
//===----------------------------------------------------------------------===//

#include "models/common/Cells.h"
#include "models/common/CommandLine.h"
#include "models/common/OpenMpWaits.h"
#include "models/common/OptionMap.h"
#include "models/common/RunFiles.h"
#include "models/common/RunLock.h"
#include "models/common/Team.h"
#include "models/nli/Training.h"

#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sys/stat.h>

using namespace nli;
using models::DataError;
using models::option;

namespace {

bool fileExists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

void addTrainOptions(CLI::App &cmd, TrainOptions &o) {
  option(cmd, "train", o.train, "training split")->required();
  option(cmd, "valid", o.valid, "validation split")->required();
  option(cmd, "model", o.model.kind, "attention (word-by-word) or bow")
      ->check(CLI::IsMember({"attention", "bow"}));
  option(cmd, "cell", o.model.cell,
         models::cellOptionHelp());
  option(cmd, "emb", o.model.emb, "embedding width")
      ->check(models::layerWidth);
  option(cmd, "hidden", o.model.hidden, "state width (bow: MLP width)")
      ->check(models::layerWidth);
  cmd.add_option_function<std::string>(
         "--between-layers",
         [&o](const std::string &value) {
           o.model.squashStates = value == "tanh";
         },
         "what the attention reads of the encoders' states: tanh (default) "
         "or raw (an ATR state is unbounded; raw: before 2026-11-28)")
      ->default_str("tanh")
      ->check(CLI::IsMember({"tanh", "raw"}));
  option(cmd, "init", o.init,
         "how a param without an initialiser in its cell file starts: paper "
         "(uniform +-0.1) or fan_in (uniform +-1/sqrt(columns))")
      ->check(CLI::IsMember({"paper", "fan_in"}));
  option(cmd, "dropout", o.model.dropout,
         "on embeddings and before the classifier")
      ->check(models::dropoutRate);
  option(cmd, "embeddings", o.embeddings,
         "pretrained vectors (GloVe or word2vec text)");
  cmd.add_flag("--freeze-embeddings", o.freezeEmbeddings,
               "keep the embedding table fixed");
  option(cmd, "vocab-max", o.vocabMax, "largest vocabulary (0: all)");
  option(cmd, "min-count", o.minCount, "drop rarer words");
  option(cmd, "lr", o.lr, "Adam learning rate")->check(models::learningRate);
  option(cmd, "clip", o.clip, "gradient-norm clipping (0: none)")
      ->check(models::clipNorm);
  option(cmd, "batch", o.batch, "pairs per update")
      ->check(models::positiveCount);
  option(cmd, "epochs", o.epochs, "epochs")->check(models::positiveCount);
  option(cmd, "max-updates", o.maxUpdates, "stop after N updates (0: no)");
  option(cmd, "seed", o.seed, "random seed");
  option(cmd, "out", o.out, "checkpoint (best one: OUT.best)");
}

/// The options a run trains with, under their option names.
std::map<std::string, std::string> optionMap(const TrainOptions &o) {
  using models::optionText;
  return {{"train", o.train},
          {"valid", o.valid},
          {"model", o.model.kind},
          {"cell", o.model.cell},
          {"emb", optionText(o.model.emb)},
          {"hidden", optionText(o.model.hidden)},
          {"between-layers", o.model.squashStates ? "tanh" : "raw"},
          {"init", o.init},
          {"init-scale", optionText(o.initScale)},
          {"dropout", optionText(o.model.dropout)},
          {"embeddings", o.embeddings},
          {"freeze-embeddings", optionText(o.freezeEmbeddings)},
          {"lowercase", optionText(o.lowercase)},
          {"vocab-max", optionText(o.vocabMax)},
          {"min-count", optionText(o.minCount)},
          {"lr", optionText(o.lr)},
          {"clip", optionText(o.clip)},
          {"batch", optionText(o.batch)},
          {"epochs", optionText(o.epochs)},
          {"max-updates", optionText(o.maxUpdates)},
          {"seed", optionText(o.seed)},
          {"out", o.out},
          {"progress", optionText(o.progress)}};
}

int train(TrainOptions options, bool resume, int threads) {
  models::setThreads(threads);
  // One writer per run (models/common/RunLock.h): rank 0 writes its files.
  std::optional<models::RunLock> lock;
  if (models::Team::world().leader())
    lock.emplace("nli", options.out);
  if (fileExists(options.out) && !resume && !options.force)
    throw DataError(options.out + " exists; continue it with --resume, or "
                                  "--force to start over");
  std::unique_ptr<Session> session;
  if (resume && fileExists(options.out)) {
    session = Session::load(options.out);
    std::cerr << "nli: resuming " << options.out << " after epoch "
              << session->epochsDone() << "\n";
  }
  bool lower = session ? session->getOptions().lowercase : options.lowercase;
  const TrainOptions &used = session ? session->getOptions() : options;
  std::vector<Pair> trainPairs = readSplit(used.train, lower);
  std::vector<Pair> validPairs = readSplit(used.valid, lower);
  // OUT.log (timestamped lines) and OUT.jsonl (one object per epoch), by
  // rank 0 alone under mpirun.
  bool writes = models::Team::world().leader();
  std::vector<std::string> runFiles = models::runFilesOf(used.out);
  runFiles.push_back(used.embeddings);
  if (session && writes)
    models::dropEventsAfter("nli", used.out + ".jsonl", session->epochsDone(),
                            session->updatesDone());
  models::RunLog runLog("nli", writes ? used.out + ".log" : "/dev/null",
                        writes ? used.out + ".jsonl" : "/dev/null", runFiles);
  runLog.configEvent(session ? session->updatesDone() : 0, optionMap(used));
  std::ostream &logFile = runLog.text();
  if (!session)
    session = std::make_unique<Session>(options, trainPairs, logFile);
  Model &model = session->getModel();
  std::cerr << "nli: " << trainPairs.size() << " training pairs, "
            << validPairs.size() << " validation pairs; model "
            << used.model.kind
            << (used.model.kind == "attention" ? " (" + used.model.cell + ")"
                                               : "")
            << ", " << model.params().count() << " parameters ("
            << model.recurrentParameterCount() << " recurrent)\n";
  session->events = &runLog;
  // The epochs' lines on stderr too, also with --no-progress.
  session->train(trainPairs, validPairs, runLog.summaries());
  std::cerr << "nli: best validation accuracy "
            << 100 * session->bestAccuracy() << "%, saved in " << used.out
            << ".best\n";
  return 0;
}

int evaluate(const std::string &modelPath, const std::string &split) {
  auto session = Session::load(modelPath);
  Evaluation result =
      session->evaluate(readSplit(split, session->getOptions().lowercase));
  std::printf("%s: accuracy %.2f%% (%lld of %lld)\n", split.c_str(),
              100 * result.accuracy(), (long long)result.correct,
              (long long)result.total);
  std::printf("%-14s %13s %13s %13s   (rows: gold, columns: predicted)\n", "",
              kLabelNames[0], kLabelNames[1], kLabelNames[2]);
  for (int gold = 0; gold < 3; ++gold)
    std::printf("%-14s %13lld %13lld %13lld\n", kLabelNames[gold],
                (long long)result.confusion[gold][0],
                (long long)result.confusion[gold][1],
                (long long)result.confusion[gold][2]);
  return 0;
}

int predict(const std::string &modelPath, const std::string &input,
            const std::string &output) {
  auto session = Session::load(modelPath);
  std::vector<int32_t> labels = session->predict(
      readUnlabelled(input, session->getOptions().lowercase));
  std::ofstream file;
  if (!output.empty()) {
    file.open(output);
    if (!file)
      throw DataError(output + ": cannot write");
  }
  std::ostream &out = output.empty() ? std::cout : file;
  for (int32_t label : labels)
    out << kLabelNames[label] << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  models::preferSleepingOpenMpThreads(argv);
  CLI::App app{"nli: natural language inference on cellc-compiled cells "
               "(word-by-word attention, Rocktaeschel et al. 2016)"};
  app.set_version_flag("--version", "nli (cellc) " CELLC_VERSION);
  app.require_subcommand(1);
  TrainOptions options;
  bool resume = false, noProgress = false;
  int threads = 1;
  CLI::App *trainCmd = app.add_subcommand("train", "train a model");
  addTrainOptions(*trainCmd, options);
  trainCmd->add_flag("--resume", resume,
                     "continue the run saved in --out (same options)");
  trainCmd->add_flag("--force", options.force, "overwrite an existing --out");
  trainCmd->add_flag("--no-progress", noProgress, "no progress bar");
  option(*trainCmd, "threads", threads, "threads (0: all cores)");
  std::string modelPath, split, input, output;
  CLI::App *evalCmd = app.add_subcommand("eval", "accuracy on a labelled split");
  option(*evalCmd, "model", modelPath, "checkpoint")->required();
  option(*evalCmd, "data", split, "split, e.g. DATA/snli/dev")->required();
  CLI::App *predictCmd =
      app.add_subcommand("predict", "labels for premise TAB hypothesis lines");
  option(*predictCmd, "model", modelPath, "checkpoint")->required();
  option(*predictCmd, "input", input, "pairs file")->required();
  option(*predictCmd, "output", output, "labels file (default: stdout)");
  // Errors as every driver gives them: `nli: error: ...`, exit code 2.
  if (std::optional<int> exit = models::parseCommands(app, argc, argv))
    return *exit;
  return models::runCommand("nli", [&] {
    if (trainCmd->parsed()) {
      options.progress = !noProgress;
      return train(options, resume, threads);
    }
    if (evalCmd->parsed())
      return evaluate(modelPath, split);
    return predict(modelPath, input, output);
  });
}
