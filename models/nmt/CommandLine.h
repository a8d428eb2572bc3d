//===- models/nmt/CommandLine.h - nmt's options -----------------*- C++ -*-===//

#ifndef CELLC_MODELS_NMT_COMMANDLINE_H
#define CELLC_MODELS_NMT_COMMANDLINE_H

#include "models/nmt/Analyze.h"
#include "models/nmt/Resume.h"

#include <optional>
#include <string>
#include <vector>

namespace nmt {
// The driver is built from the layer library in models/common.
using namespace models;

struct TranslateRequest {
  /// One checkpoint, or several: an ensemble.
  std::vector<std::string> models;
  std::string input, output;
  /// 0: one translation per line; K: Moses n-best lines.
  int64_t beam = 5, batchSize = 32, nBest = 0;
  float lengthPenalty = 1.0f;
  bool tokenized = false;
};

struct ScoreRequest {
  std::string ref, hyp, tokenize = "13a", metric = "bleu";
  bool lc = false;
};

struct AverageRequest {
  std::vector<std::string> checkpoints;
  std::string out;
};

struct TaskRequest {
  TrainOptions options; // the --task-* options
  std::string split = "test", side = "src";
};

/// A parsed command line: the command and its request.
struct CommandLine {
  std::string command;
  int64_t threads = 0;
  TrainRequest train;
  TranslateRequest translate;
  ScoreRequest score;
  AverageRequest average;
  TaskRequest task;
  AnalyzeRequest analyze;
};

/// Parses argv into `cli`. Returns the exit code when nmt must stop here:
/// 0 after --help or --version, 2 after a usage error (printed, naming the
/// option).
std::optional<int> parseCommandLine(int argc, char **argv, CommandLine &cli);

} // namespace nmt

#endif
