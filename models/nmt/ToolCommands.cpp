//===- models/nmt/ToolCommands.cpp - nmt score, average, task, analyze ----===//
//
//   nmt score --ref R --hyp H      corpus BLEU-4 (sacreBLEU 13a or multi-bleu)
//                                  or chrF2 (--metric chrf), with a signature
//   nmt average --out AVG A B ...  average checkpoints' parameters
//   nmt task --split S --side SIDE print the embedded task's text
//   nmt analyze --model CKPT --src F --ref F --out DIR   gate analyses
//
//===----------------------------------------------------------------------===//

#include "models/common/Bleu.h"
#include "models/common/Chrf.h"
#include "models/nmt/Analyze.h"
#include "models/nmt/Average.h"
#include "models/nmt/Commands.h"

#include <cstdio>

namespace nmt {

namespace {

struct ScoreRequest {
  std::string ref, hyp, tokenize = "13a", metric = "bleu";
  bool lc = false;
};

void addScoreOptions(CLI::App &cmd, ScoreRequest &r) {
  cmd.add_option("--ref", r.ref, "reference lines")->required();
  cmd.add_option("--hyp", r.hyp, "hypothesis lines ('-': stdin)")->required();
  option(cmd, "metric", r.metric,
         "bleu, or chrf (sacreBLEU's chrF2: character 1..6-grams without "
         "whitespace, beta 2)")
      ->check(CLI::IsMember({"bleu", "chrf"}));
  option(cmd, "tokenize", r.tokenize,
         "BLEU's tokens: 13a (sacreBLEU, 'exp' smoothing) or none (the "
         "text's own, multi-bleu: no smoothing)")
      ->check(CLI::IsMember({"13a", "none"}));
  cmd.add_flag("--lc", r.lc, "lower-case before scoring");
}

int score(const ScoreRequest &r) {
  auto refs = readLines(r.ref);
  auto hyps = readInputLines(r.hyp);
  if (refs.size() != hyps.size())
    throw DataError("different line counts: " + r.ref + " has " +
                    std::to_string(refs.size()) + " lines, " + r.hyp + " has " +
                    std::to_string(hyps.size()));
  // The score, then sacreBLEU's signature of what was computed.
  if (r.metric == "chrf") {
    std::printf("%s %s\n", corpusChrf(hyps, refs, r.lc).str().c_str(),
                chrfSignature(r.lc, CELLC_VERSION).c_str());
    return 0;
  }
  bool t13a = r.tokenize == "13a";
  BleuScore score = t13a ? corpusSacreBleu(hyps, refs, r.lc)
                         : corpusMultiBleu(hyps, refs, r.lc);
  std::printf("%s %s\n", score.str().c_str(),
              bleuSignature(t13a, r.lc, CELLC_VERSION).c_str());
  return 0;
}

struct AverageRequest {
  std::vector<std::string> checkpoints;
  std::string out;
};

void addAverageOptions(CLI::App &cmd, AverageRequest &r) {
  cmd.add_option("checkpoints", r.checkpoints, "checkpoints (two or more)")
      ->required()
      ->expected(2, 1000);
  cmd.add_option("--out", r.out,
                 "the averaged checkpoint (a new file: an existing one is "
                 "never replaced)")
      ->required();
}

int average(const AverageRequest &r) {
  std::unique_ptr<Session> mean = averageCheckpoints(r.checkpoints);
  saveAsNewFile(*mean, r.out);
  std::fprintf(stderr, "averaged %zu checkpoints into %s\n",
               r.checkpoints.size(), r.out.c_str());
  return 0;
}

struct TaskRequest {
  TrainOptions options; // the --task-* options
  std::string split = "test", side = "src";
};

void addTaskOptions(CLI::App &cmd, TaskRequest &r) {
  option(cmd, "split", r.split, "train, valid or test")
      ->check(CLI::IsMember({"train", "valid", "test"}));
  option(cmd, "side", r.side, "src, tgt or tgt-raw")
      ->check(CLI::IsMember({"src", "tgt", "tgt-raw"}));
  addOptionTable(cmd, r.options, TrainOptions::TaskGroup);
}

int task(const TaskRequest &r) {
  const TrainOptions &o = r.options;
  NumbersTask t = makeNumbersTask(o.taskSeed, o.taskTrain, o.taskValid,
                                  o.taskTest, o.taskMax);
  const TextSplit &s = r.split == "train"   ? t.train
                       : r.split == "valid" ? t.valid
                                            : t.test;
  for (size_t i = 0; i < s.src.size(); ++i) {
    if (r.side == "src")
      std::printf("%s\n", s.src[i].c_str());
    else if (r.side == "tgt")
      std::printf("%s\n", s.tgt[i].c_str());
    else
      std::printf("%s\n", joinTokens(splitWhitespace(s.tgt[i]), "").c_str());
  }
  return 0;
}

void addAnalyzeOptions(CLI::App &cmd, AnalyzeRequest &r) {
  cmd.add_option("--model", r.model, "checkpoint")->required();
  cmd.add_option("--src", r.src, "source lines")->required();
  cmd.add_option("--ref", r.ref, "target lines (force-decoded)")->required();
  cmd.add_option("--out", r.out, "folder for analysis.json, CSV and pictures")
      ->required();
  cmd.add_option("--gates", r.gates,
                 "probed gates (default: atr/ran/lstm i,f; gru/lau z,r; "
                 "sru f,r)")
      ->delimiter(',');
  cmd.add_option("--additive", r.additive,
                 "input and forget gate of a cell h' = i*p + f*h for Eq. 10; "
                 "1-z is z's complement (default i,f for atr, ran, lstm; "
                 "1-z,z for gru, whose z forgets; 'none' to skip)")
      ->delimiter(',');
  option(cmd, "sentences", r.sentences, "sentences drawn as arcs")
      ->check(CLI::Range(0, 1000));
  option(cmd, "batch-size", r.batchSize, "sentences per batch")
      ->check(CLI::Range(1, 100000));
  cmd.add_flag("--own-translation", r.ownTranslation,
               "force-decode the model's own translation (beam --beam), "
               "not --ref");
  option(cmd, "beam", r.beam, "beam of --own-translation")
      ->check(CLI::Range(1, 1000));
  cmd.add_flag("--no-plots", r.noPlots, "write JSON and CSV only");
}

int runAnalysis(const AnalyzeRequest &r) {
  analyze(r);
  return 0;
}

} // namespace

models::DriverCommand scoreCommand() {
  return models::requestCommand(
      "score", "Corpus BLEU-4 or chrF2 with sacreBLEU's signature",
      addScoreOptions, score);
}

models::DriverCommand averageCommand() {
  return models::requestCommand(
      "average",
      "Average the parameters of checkpoints of one model (same "
      "architecture and vocabularies)",
      addAverageOptions, average);
}

models::DriverCommand taskCommand() {
  return models::requestCommand("task", "Print the embedded task",
                                addTaskOptions, task);
}

models::DriverCommand analyzeCommand() {
  return models::requestCommand(
      "analyze",
      "The ATR paper's gate analyses (Figures 3 and 4) of a trained model: "
      "gate means by position, r, Eq. 10 arcs",
      addAnalyzeOptions, runAnalysis);
}

} // namespace nmt
