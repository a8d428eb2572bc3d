//===- models/nli/Main.cpp - The nli command ------------------------------===//
//
//   nli train --train DATA/snli/train_small --valid DATA/snli/dev [options]
//   nli eval --model CKPT --data DATA/snli/dev
//   nli predict --model CKPT --input pairs.tsv    (premise TAB hypothesis)
//
// A split is a path without its file parts: DIR/dev reads SNLI's
// DIR/{s1,s2,labels}.dev or SICK's DIR/dev.tsv. The driver kit
// (models/common/Driver.h) parses the options; `train`'s are the table in
// models/nli/Options.h.
//
//===----------------------------------------------------------------------===//

#include "models/common/Driver.h"
#include "models/nli/Training.h"

#include <fstream>
#include <iostream>

using namespace nli;
using models::DataError;
using models::option;

namespace {

struct EvalRequest {
  std::string model, split;
};

void addEvalOptions(CLI::App &cmd, EvalRequest &r) {
  option(cmd, "model", r.model, "checkpoint")->required();
  option(cmd, "data", r.split, "split, e.g. DATA/snli/dev")->required();
}

int evaluate(const EvalRequest &r) {
  auto session = Session::load(r.model);
  Evaluation result =
      session->evaluate(readSplit(r.split, session->options.lowercase));
  std::printf("%s: accuracy %.2f%% (%lld of %lld)\n", r.split.c_str(),
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

struct PredictRequest {
  std::string model, input, output;
};

void addPredictOptions(CLI::App &cmd, PredictRequest &r) {
  option(cmd, "model", r.model, "checkpoint")->required();
  option(cmd, "input", r.input, "pairs file")->required();
  option(cmd, "output", r.output, "labels file (default: stdout)");
}

int predict(const PredictRequest &r) {
  auto session = Session::load(r.model);
  std::vector<int32_t> labels =
      session->predict(readUnlabelled(r.input, session->options.lowercase));
  std::ofstream file;
  if (!r.output.empty()) {
    file.open(r.output);
    if (!file)
      throw DataError(r.output + ": cannot write");
  }
  std::ostream &out = r.output.empty() ? std::cout : file;
  for (int32_t label : labels)
    out << kLabelNames[label] << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return models::driverMain(
      argc, argv,
      {"nli",
       "nli: natural language inference on cellc-compiled cells "
       "(word-by-word attention, Rocktaeschel et al. 2016)",
       CELLC_VERSION},
      {models::trainCommand("train a model", nli::runRules()),
       models::requestCommand("eval", "accuracy on a labelled split",
                              addEvalOptions, evaluate),
       models::requestCommand("predict",
                              "labels for premise TAB hypothesis lines",
                              addPredictOptions, predict)});
}
