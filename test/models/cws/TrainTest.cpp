//===- TrainTest.cpp - cws learns to segment a real slice of PKU ----------===//
//
// A few seconds of training on the first 1000 sentences of the PKU training
// slice, validated on the next 100: the F1 floor is far above what a model
// that learned nothing reaches (every character a word, or one word per
// sentence, both scored here), and above forward maximum matching with the
// same training words (0.800). Skipped when ../shared/data is absent.
//
//===----------------------------------------------------------------------===//

#include "TestFiles.h"
#include "TinyCorpus.h"

#include "models/cws/Baseline.h"

#include <fstream>

using namespace cws;
using namespace cws::test;

namespace {

/// Lines [from, to) of `path` in a file of their own.
std::string slice(const std::string &path, size_t from, size_t to,
                  const std::string &name) {
  std::vector<std::string> lines = models::readLines(path);
  std::string text;
  for (size_t i = from; i < std::min(to, lines.size()); ++i)
    text += lines[i] + "\n";
  return writeFile(name, text);
}

/// F1 of segmenting every gold sentence with `segmenter`.
template <class Segmenter>
double f1Of(const std::vector<Sentence> &gold, const WordSet &trainWords,
            Segmenter segmenter) {
  ScoreCounts total;
  for (const Sentence &sentence : gold)
    total.add(scoreLine(wordsFromTags(sentence.chars, sentence.tags),
                        segmenter(sentence), trainWords));
  return total.f1();
}

TEST(CwsTrain, LearnsToSegmentASliceOfPku) {
  std::string dir = sharedDataDir();
  if (dir.empty())
    GTEST_SKIP() << "../shared/data/cws is absent: no real data to train on";
  std::string pku = dir + "/sighan2005-pku/pku_train_last10pct.utf8";
  TrainOptions options = tinyOptions("pku", slice(pku, 0, 1000, "train1000"));
  options.valid = slice(pku, 1000, 1100, "valid100");
  options.cell = "atr";
  options.emb = options.hidden = 64;
  options.batch = 8;
  options.lr = 4e-3f;
  options.lrDecay = 0.85f;
  options.epochs = 8;
  options.minCount = 2;
  TrainRequest request{options, {}, false, false};
  TrainData data;
  auto session = prepareTraining(request, data);
  session->train(data);
  double f1 = session->state.bestF1;

  double singles = f1Of(data.valid, data.trainWords, [](const Sentence &s) {
    return s.chars;
  });
  double whole = f1Of(data.valid, data.trainWords, [](const Sentence &s) {
    return std::vector<std::string>{joinWords(s.chars)};
  });
  std::vector<std::string> words(data.trainWords.begin(),
                                 data.trainWords.end());
  MaxMatch matcher(words);
  double maxMatch = f1Of(data.valid, data.trainWords, [&](const Sentence &s) {
    Sentence raw = s;
    raw.tags.clear();
    return matcher.segment(raw);
  });
  RecordProperty("valid_f1", std::to_string(f1));
  EXPECT_LT(singles, 0.6);
  EXPECT_LT(whole, 0.1);
  EXPECT_GE(f1, 0.81) << "max matching " << maxMatch;
  EXPECT_GT(f1, maxMatch);
}

} // namespace
