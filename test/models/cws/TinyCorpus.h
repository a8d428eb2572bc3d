//===- TinyCorpus.h - A synthetic segmented corpus for cws tests -*- C++ -*-===//

#ifndef CELLC_TEST_MODELS_CWS_TINYCORPUS_H
#define CELLC_TEST_MODELS_CWS_TINYCORPUS_H

#include "models/common/Math.h"
#include "models/cws/Corpus.h"
#include "models/cws/Session.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace cws::test {

/// `count` lines of 3 to 8 words drawn from a small lexicon, words
/// separated by two spaces as in PKU.
inline std::string tinyCorpus(int count, uint64_t seed) {
  static const char *lexicon[] = {"中国", "人民", "共同", "创造", "美好",
                                  "的",   "新",   "世纪", "发展", "经济",
                                  "我们", "是",   "了",   "北京", "大学"};
  models::Rng rng(seed);
  std::string text;
  for (int i = 0; i < count; ++i) {
    int words = 3 + int(rng.below(6));
    for (int w = 0; w < words; ++w)
      text += std::string(w ? "  " : "") + lexicon[rng.below(15)];
    text += "\r\n";
  }
  return text;
}

/// Fast options over `train` writing TempDir()/NAME.ckpt (old files of that
/// name removed).
inline TrainOptions tinyOptions(const std::string &name,
                                const std::string &train) {
  TrainOptions o;
  o.train = train;
  o.cell = "gru";
  o.emb = 8;
  o.hidden = 8;
  o.batch = 4;
  o.lr = 1e-2f;
  o.lrDecay = 0.9f;
  o.epochs = 3;
  o.minCount = 1;
  o.progress = false;
  o.out = testing::TempDir() + "cws-" + name + ".ckpt";
  for (const std::string &suffix : {"", ".best", ".tmp", ".log"})
    std::remove((o.out + suffix).c_str());
  return o;
}

} // namespace cws::test

#endif
