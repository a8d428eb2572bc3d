//===- models/nmt/Main.cpp - The nmt command ------------------------------===//
//
//   nmt train [options]            train (default: the embedded numbers task)
//   nmt translate --model CKPT...  translate raw lines (stdin or --input) with
//                                  a model or an ensemble; --n-best K
//   nmt average --out AVG A B ...  average checkpoints' parameters
//   nmt score --ref R --hyp H      corpus BLEU-4 or chrF2, with a signature
//   nmt task --split S --side SIDE print the embedded task's text
//   nmt analyze --model CKPT --src F --ref F --out DIR   gate analyses
//
// The driver kit (models/common/Driver.h) parses the options: an unknown or
// misspelt option, a missing or malformed value, or one out of range is an
// error naming the option; every command has its own --help listing the
// defaults, --config FILE and --threads. `train`'s options are the table
// in models/nmt/Options.h.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/Commands.h"
#include "models/nmt/Resume.h"

int main(int argc, char **argv) {
  return models::driverMain(
      argc, argv,
      {"nmt", "nmt: attention NMT over cellc-compiled cells", CELLC_VERSION},
      {models::trainCommand("Train a model (default: the embedded numbers "
                            "task)",
                            nmt::runRules()),
       nmt::translateCommand(), nmt::scoreCommand(), nmt::averageCommand(),
       nmt::taskCommand(), nmt::analyzeCommand()});
}
