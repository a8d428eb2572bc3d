//===- TinyRun.h - A training run small enough for a unit test --*- C++ -*-===//

#ifndef CELLC_TEST_MODELS_TINYRUN_H
#define CELLC_TEST_MODELS_TINYRUN_H

#include "models/nmt/Trainer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace nmt::test {

/// A few milliseconds per update on the embedded task, writing
/// TempDir()/NAME.ckpt (old files of that name removed), no early stop.
inline TrainOptions tinyRun(const std::string &name, const std::string &cell) {
  TrainOptions o;
  o.taskTrain = 150;
  o.taskValid = 10;
  o.taskTest = 10;
  o.maxTokens = 300;
  o.model.cell = cell;
  o.model.emb = 8;
  o.model.hidden = 12;
  o.model.att = 8;
  o.model.readout = 8;
  o.model.dropout = 0.1f;
  o.lr = 5e-3f;
  o.epochs = 100;
  o.patience = 0;
  o.progress = false;
  o.logEvery = 0;
  o.out = testing::TempDir() + name + ".ckpt";
  for (const std::string &suffix : {"", ".best", ".tmp", ".log"})
    std::remove((o.out + suffix).c_str());
  return o;
}

inline std::string bytesOf(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// A model of a few hundred params for gradient and recording checks: 9
/// source and 8 target words, widths 3-5, no dropout.
inline ModelConfig tinyModelConfig(const std::string &cellName,
                                   const std::string &arch,
                                   int64_t layers = 1,
                                   const std::string &context = "last") {
  ModelConfig config;
  config.context = context;
  config.cell = cellName;
  config.arch = arch;
  config.encLayers = config.decLayers = layers;
  config.srcVocab = 9;
  config.tgtVocab = 8;
  config.emb = 4;
  config.hidden = 5;
  config.att = 3;
  config.readout = 4;
  config.dropout = 0;
  return config;
}

} // namespace nmt::test

#endif
