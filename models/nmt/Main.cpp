//===- models/nmt/Main.cpp - The nmt command ------------------------------===//
//
//   nmt train [options]            train (default: the embedded numbers task)
//   nmt translate --model CKPT...  translate raw lines (stdin or --input) with
//                                  a model or an ensemble; --n-best K
//   nmt average --out AVG A B ...  average checkpoints' parameters
//   nmt score --ref R --hyp H      corpus BLEU-4 (sacreBLEU 13a or multi-bleu)
//                                  or chrF2 (--metric chrf), with a signature
//   nmt task --split S --side SIDE print the embedded task's text
//   nmt analyze --model CKPT --src F --ref F --out DIR   gate analyses
//
// Options are parsed by CLI11: an unknown or misspelt option, a missing or
// malformed value, or one out of range is an error naming the option, and
// every command has its own --help listing the defaults.
//
//===----------------------------------------------------------------------===//

#include "models/common/Bleu.h"
#include "models/common/Chrf.h"
#include "models/common/CommandLine.h"
#include "models/common/OpenMpWaits.h"
#include "models/common/RunLock.h"
#include "models/common/Team.h"
#include "models/nmt/Average.h"
#include "models/nmt/CommandLine.h"
#include "models/nmt/Resume.h"
#include "models/nmt/Translator.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

using namespace nmt;

namespace {

int train(const TrainRequest &request) {
  // One writer per run (models/common/RunLock.h): rank 0 writes its files.
  std::optional<models::RunLock> lock;
  if (models::Team::world().leader())
    lock.emplace("nmt", request.options.out);
  TrainData data;
  auto session = prepareTraining(request, data);
  if (session)
    session->train(data);
  return 0;
}

/// Each line's translations: its best, or (--n-best) Moses n-best lines.
std::vector<std::string>
outputLines(const std::vector<std::vector<Translation>> &translations,
            const TranslateRequest &r) {
  std::vector<std::string> out;
  for (size_t i = 0; i < translations.size(); ++i) {
    if (r.nBest == 0) {
      const Translation *best =
          translations[i].empty() ? nullptr : &translations[i][0];
      out.push_back(!best ? "" : r.tokenized ? best->tokenized : best->text);
      continue;
    }
    for (const Translation &t : translations[i]) {
      char score[32];
      std::snprintf(score, sizeof score, "%.6f", t.score);
      out.push_back(std::to_string(i) + " ||| " +
                    (r.tokenized ? t.tokenized : t.text) + " ||| " + score);
    }
  }
  return out;
}

int translate(const TranslateRequest &r) {
  // An ensemble's models must read and write the same tokens.
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<Session *> models;
  for (const std::string &path : r.models) {
    sessions.push_back(Session::load(path));
    models.push_back(sessions.back().get());
    checkSameVocabularies(*models[0], r.models[0], *models.back(), path);
  }
  auto lines = readInputLines(r.input);
  DecodeOptions options;
  options.beam = r.beam;
  options.batchSize = r.batchSize;
  options.lengthPenalty = r.lengthPenalty;
  options.nBest = std::max<int64_t>(1, r.nBest);
  int64_t words = 0;
  auto start = std::chrono::steady_clock::now();
  auto translations = translateLines(models, lines, options, &words);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  writeOutputLines(r.output, outputLines(translations, r));
  std::fprintf(stderr,
               "translated %zu sentences, %lld target words in %.2f s "
               "(%.0f words/s, beam %lld)\n",
               lines.size(), (long long)words, seconds, words / seconds,
               (long long)r.beam);
  return 0;
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

int average(const AverageRequest &r) {
  std::unique_ptr<Session> mean = averageCheckpoints(r.checkpoints);
  saveAsNewFile(*mean, r.out);
  std::fprintf(stderr, "averaged %zu checkpoints into %s\n",
               r.checkpoints.size(), r.out.c_str());
  return 0;
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

int run(const CommandLine &cli) {
  if (cli.threads > 0)
    setThreads(int(cli.threads));
  if (cli.command == "train")
    return train(cli.train);
  if (cli.command == "translate")
    return translate(cli.translate);
  if (cli.command == "score")
    return score(cli.score);
  if (cli.command == "average")
    return average(cli.average);
  if (cli.command == "analyze") {
    analyze(cli.analyze);
    return 0;
  }
  return task(cli.task);
}

} // namespace

int main(int argc, char **argv) {
  models::preferSleepingOpenMpThreads(argv);
  CommandLine cli;
  if (std::optional<int> exit = parseCommandLine(argc, argv, cli))
    return *exit;
  return models::runCommand("nmt", [&] { return run(cli); });
}
