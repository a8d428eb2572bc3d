//===- models/nmt/TranslateCommand.cpp - nmt translate --------------------===//
//
//   nmt translate --model CKPT... [--input F] [--n-best K]
//
// Translates raw lines (stdin or --input) with a model, or with an
// ensemble of models of one vocabulary; prints each line's best
// translation, or its K best as Moses n-best lines.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/Commands.h"
#include "models/nmt/Translator.h"

#include "cellrt/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include <sched.h>

namespace nmt {

namespace {

struct TranslateRequest {
  /// One checkpoint, or several: an ensemble.
  std::vector<std::string> models;
  std::string input, output;
  /// 0: one translation per line; K: Moses n-best lines.
  int64_t beam = 5, batchSize = 32, nBest = 0;
  float lengthPenalty = 1.0f;
  bool tokenized = false;
  /// How --threads splits the work: "batches" or "products".
  std::string parallel = "batches";
};

void addTranslateOptions(CLI::App &cmd, TranslateRequest &r) {
  cmd.add_option("--model", r.models,
                 "checkpoint; several (--model a b, or --model repeated): an "
                 "ensemble averaging their log-probabilities at every step "
                 "(same vocabularies)")
      ->required();
  option(cmd, "input", r.input, "input (default: stdin)");
  option(cmd, "output", r.output, "output (default: stdout)");
  option(cmd, "beam", r.beam, "beam size")->check(CLI::Range(1, 1000));
  option(cmd, "length-penalty", r.lengthPenalty, "score / length^P")
      ->check(CLI::Range(0.0, 10.0));
  option(cmd, "batch-size", r.batchSize, "sentences per batch")
      ->check(CLI::Range(1, 100000));
  cmd.add_flag("--tokenized", r.tokenized, "print tokenised output");
  option(cmd, "parallel", r.parallel,
         "what --threads N splits: 'batches' decodes N batches side by "
         "side, one core and one copy of the model each (the faster), "
         "'products' each batch's products across the N threads (one copy; "
         "what a single batch gets either way)")
      ->check(CLI::IsMember({"batches", "products"}));
  option(cmd, "n-best", r.nBest,
         "print each line's K best finished hypotheses, best first, as "
         "Moses n-best lines 'ID ||| TEXT ||| SCORE' (ID from 0; SCORE: "
         "log-probability / length^P); K <= --beam (0: one line per input)")
      ->check(CLI::Range(0, 1000));
}

std::string checkTranslate(const TranslateRequest &r) {
  if (r.nBest <= r.beam)
    return "";
  return "--n-best " + std::to_string(r.nBest) +
         ": the beam keeps only --beam " + std::to_string(r.beam) +
         " hypotheses";
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

/// The CPUs this process may run on (its affinity, as taskset or a
/// container sets it): --threads 0 means every core of the machine, but
/// a model copy per CPU it cannot use would only cost memory.
int64_t allowedCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return std::numeric_limits<int64_t>::max();
  return std::max(1, CPU_COUNT(&set));
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
  // --threads N decodes N batches side by side, one core each: a beam
  // step's products are too small to split well (1,000 sentences on 2
  // cores: RNNSearch ATR 1.52x one thread's words/s split, 1.69x side by
  // side; models/nmt/README.md, "Decoding side by side").
  const int64_t workers =
      r.parallel == "batches"
          ? std::min<int64_t>(cellrt::getNumThreads(), allowedCpus())
          : 1;
  int64_t used = 1;
  auto translations =
      translateLinesSideBySide(models, workers, lines, options, &words, &used);
  const std::string sideBySide =
      used < 2 ? "" : ", " + std::to_string(used) + " batches side by side";
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  writeOutputLines(r.output, outputLines(translations, r));
  std::fprintf(stderr,
               "translated %zu sentences, %lld target words in %.2f s "
               "(%.0f words/s, beam %lld%s)\n",
               lines.size(), (long long)words, seconds, words / seconds,
               (long long)r.beam, sideBySide.c_str());
  return 0;
}

} // namespace

models::DriverCommand translateCommand() {
  return models::requestCommand("translate", "Translate raw lines",
                                addTranslateOptions, translate, checkTranslate);
}

} // namespace nmt
