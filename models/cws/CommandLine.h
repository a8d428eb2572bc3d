//===- models/cws/CommandLine.h - cws's options -----------------*- C++ -*-===//

#ifndef CELLC_MODELS_CWS_COMMANDLINE_H
#define CELLC_MODELS_CWS_COMMANDLINE_H

#include "models/cws/Session.h"

#include <cstdint>
#include <optional>
#include <string>

namespace cws {

struct ScoreRequest {
  std::string gold, test, words, format = "auto";
  int64_t digits = 3;
};

struct SegmentRequest {
  std::string model, input, output, format = "auto";
  int64_t batch = 64;
};

struct BaselineRequest {
  std::string words, input, output, format = "auto";
};

/// A parsed command line: the command and its request.
struct CommandLine {
  std::string command;
  int64_t threads = 1;
  TrainRequest train;
  SegmentRequest segment;
  ScoreRequest score;
  BaselineRequest baseline;
};

/// Parses argv into `cli`. Returns the exit code when cws must stop here:
/// 0 after --help or --version, 2 after a usage error (printed, naming the
/// option).
std::optional<int> parseCommandLine(int argc, char **argv, CommandLine &cli);

} // namespace cws

#endif
