//===- EnsembleTest.cpp - n-best lists, ensembles, checkpoint averaging ---===//

#include "models/nmt/Ensemble.h"
#include "models/common/Cells.h"
#include "models/nmt/Average.h"
#include "models/nmt/Translator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <unistd.h>

using namespace nmt;

namespace {

[[maybe_unused]] const bool singleThreaded = setThreads(1);

ModelConfig tinyConfig(const std::string &arch) {
  ModelConfig config;
  config.cell = "gru";
  config.arch = arch;
  config.srcVocab = 9;
  config.tgtVocab = 8;
  config.emb = config.hidden = 6;
  config.att = 4;
  config.readout = 5;
  config.dropout = 0;
  return config;
}

std::unique_ptr<TranslationModel> tinyModel(const std::string &arch,
                                            uint64_t seed) {
  ModelConfig config = tinyConfig(arch);
  auto model = makeModel(config, loadCell(config.cell));
  model->initialize(seed, cellrt::InitScheme::uniform(0.8f));
  return model;
}

const std::vector<std::vector<int32_t>> kSources = {
    {4, 5, 6, 7}, {8, 4}, {5, 6}, {7}};

Batch sources() { return makeSourceBatch(kSources, {0, 1, 2, 3}); }

/// Every sentence's n-best list, tokens and scores.
std::vector<std::vector<Hypothesis>>
decode(const std::vector<TranslationModel *> &models, int64_t beam) {
  return searchBatch(models, sources(), beam, 8, 1.f).nBest(beam);
}

void expectSame(const std::vector<std::vector<Hypothesis>> &a,
                const std::vector<std::vector<Hypothesis>> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t s = 0; s < a.size(); ++s) {
    ASSERT_EQ(a[s].size(), b[s].size()) << "sentence " << s;
    for (size_t k = 0; k < a[s].size(); ++k) {
      EXPECT_EQ(a[s][k].tokens, b[s][k].tokens) << s << "," << k;
      EXPECT_EQ(a[s][k].score, b[s][k].score) << s << "," << k;
    }
  }
}

} // namespace

// The n-best list: at most K, best first, led by best()'s hypothesis.
TEST(NBest, SortedAndLedByTheBest) {
  auto model = tinyModel("rnnsearch", 3);
  BeamSearch search = searchBatch({model.get()}, sources(), 4, 8, 1.f);
  std::vector<double> scores;
  auto best = search.best(&scores);
  auto lists = search.nBest(3);
  for (size_t s = 0; s < lists.size(); ++s) {
    ASSERT_FALSE(lists[s].empty());
    EXPECT_LE(lists[s].size(), 3u);
    EXPECT_EQ(lists[s][0].tokens, best[s]);
    EXPECT_EQ(lists[s][0].score, scores[s]);
    for (size_t k = 1; k < lists[s].size(); ++k)
      EXPECT_GE(lists[s][k - 1].score, lists[s][k].score);
  }
  EXPECT_EQ(search.nBest(1)[0].size(), 1u);
}

// An ensemble of one model is that model; of two copies (two objects with
// the same parameters), too: the mean of equal log-probabilities is each of
// them exactly. Greedy and beam, RNNSearch and SR-NMT.
TEST(Ensemble, OneModelAndTwoCopiesDecodeAsTheModel) {
  for (const char *arch : {"rnnsearch", "srnmt"})
    for (int64_t beam : {1, 3}) {
      SCOPED_TRACE(std::string(arch) + " beam " + std::to_string(beam));
      auto model = tinyModel(arch, 3), copy = tinyModel(arch, 3);
      std::vector<double> scores;
      auto alone = model->translate(sources(), beam, 8, 1.f, &scores);
      auto one = decode({model.get()}, beam);
      for (size_t s = 0; s < alone.size(); ++s) {
        EXPECT_EQ(one[s][0].tokens, alone[s]);
        EXPECT_EQ(one[s][0].score, scores[s]);
      }
      expectSame(decode({model.get(), copy.get()}, beam), one);
    }
}

// Two different models: the ensemble's score of its best hypothesis is the
// mean of the two models' forced-decoding log-probabilities of it.
TEST(Ensemble, ScoresAreTheMeanOfTheModels) {
  auto a = tinyModel("rnnsearch", 3), b = tinyModel("rnnsearch", 4);
  Batch batch = sources();
  const int64_t limit = 8;
  std::vector<double> scores;
  BeamSearch search =
      searchBatch({a.get(), b.get()}, batch, 1, limit, /*lengthPenalty=*/0.f);
  auto hyps = search.best(&scores);
  std::vector<Example> examples;
  for (size_t s = 0; s < hyps.size(); ++s)
    examples.push_back({kSources[s], hyps[s]});
  Batch forced = makeBatch(examples, {0, 1, 2, 3});
  auto pa = a->targetLogProbs(forced), pb = b->targetLogProbs(forced);
  for (size_t s = 0; s < hyps.size(); ++s) {
    size_t scored = hyps[s].size() + (hyps[s].size() < size_t(limit) ? 1 : 0);
    double sum = 0;
    for (size_t j = 0; j < scored; ++j)
      sum += 0.5 * (pa[j * forced.B + s] + pb[j * forced.B + s]);
    EXPECT_NEAR(sum, scores[s], 1e-4 * (1 + std::abs(sum))) << s;
  }
}

// A model decodes in the product precision it was built in, whatever the
// process's setting is when it decodes. The setting is the last loaded
// model's: an ensemble of an f32 and a bf16 model once decoded both in the
// bf16 model's (and the f32 model alone too, when loaded first).
TEST(Ensemble, EachModelDecodesInThePrecisionItWasBuiltIn) {
  using cellrt::Precision;
  // The tests after this one run in f32 whatever happens here.
  struct F32Again {
    ~F32Again() { setProductPrecision(Precision::F32); }
  } f32Again;
  setProductPrecision(Precision::F32);
  auto f32 = tinyModel("rnnsearch", 3);
  setProductPrecision(Precision::BF16);
  auto bf16 = tinyModel("rnnsearch", 4), f32InBf16 = tinyModel("rnnsearch", 3);
  EXPECT_EQ(f32->precision(), Precision::F32);
  EXPECT_EQ(bf16->precision(), Precision::BF16);
  auto mixedAfterBf16 = decode({f32.get(), bf16.get()}, 3);
  auto aloneAfterBf16 = decode({f32.get()}, 3);
  auto roundedAlone = decode({f32InBf16.get()}, 3);
  setProductPrecision(Precision::F32);
  expectSame(decode({f32.get(), bf16.get()}, 3), mixedAfterBf16);
  expectSame(decode({f32.get()}, 3), aloneAfterBf16);
  // Which the test can tell: the same parameters in bf16 score otherwise.
  bool differs = false;
  for (size_t s = 0; s < roundedAlone.size(); ++s)
    differs |= roundedAlone[s][0].score != aloneAfterBf16[s][0].score;
  EXPECT_TRUE(differs);
}

TEST(Ensemble, RefusesDifferentVocabularySizes) {
  auto a = tinyModel("rnnsearch", 3);
  ModelConfig config = tinyConfig("rnnsearch");
  config.tgtVocab = 9;
  auto b = makeModel(config, loadCell(config.cell));
  EXPECT_THROW(searchBatch({a.get(), b.get()}, sources(), 2, 8, 1.f),
               DataError);
}

namespace {

TrainOptions tinyOptions(uint64_t seed) {
  TrainOptions o;
  o.task = "numbers";
  o.taskTrain = 200;
  o.taskValid = o.taskTest = 10;
  o.model.cell = "gru";
  o.model.emb = o.model.hidden = o.model.att = o.model.readout = 8;
  o.seed = seed;
  o.progress = false;
  return o;
}

/// A fresh session of `o` saved at a temporary path.
std::string savedSession(const TrainOptions &o, const std::string &name) {
  Session session(o, loadTrainData(o));
  std::string path = testing::TempDir() + "nmt-average-" + name + ".ckpt";
  std::remove(path.c_str());
  session.save(path);
  return path;
}

std::string errorOf(const std::function<void()> &run) {
  try {
    run();
  } catch (const DataError &error) {
    return error.what();
  }
  return "";
}

} // namespace

// Averaging two copies of one checkpoint gives its parameters back exactly;
// two different ones, their mean, per value. The average is a new file,
// never written over an existing one.
TEST(Average, CopiesGiveTheModelAndTwoModelsTheirMean) {
  std::string a = savedSession(tinyOptions(1), "a");
  std::string b = savedSession(tinyOptions(2), "b");
  auto first = Session::load(a), second = Session::load(b);
  auto same = averageCheckpoints({a, a});
  auto mean = averageCheckpoints({a, b});
  auto pa = first->model->params(), pb = second->model->params();
  auto ps = same->model->params(), pm = mean->model->params();
  ASSERT_EQ(pa.size(), pm.size());
  bool anyDiffers = false;
  for (size_t p = 0; p < pa.size(); ++p) {
    EXPECT_EQ(ps[p]->value, pa[p]->value) << pa[p]->name;
    for (size_t i = 0; i < pa[p]->value.size(); ++i) {
      float expected =
          float((double(pa[p]->value[i]) + double(pb[p]->value[i])) / 2);
      ASSERT_EQ(pm[p]->value[i], expected) << pa[p]->name << "[" << i << "]";
      anyDiffers |= pa[p]->value[i] != pb[p]->value[i];
    }
  }
  EXPECT_TRUE(anyDiffers);
  EXPECT_NE(mean->runId, first->runId);

  std::string out = testing::TempDir() + "nmt-average-out.ckpt";
  std::remove(out.c_str());
  saveAsNewFile(*mean, out);
  auto reloaded = Session::load(out);
  EXPECT_EQ(reloaded->model->params()[0]->value, pm[0]->value);
  EXPECT_NE(errorOf([&] { saveAsNewFile(*mean, out); }).find(out + ": exists"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { saveAsNewFile(*mean, a); }), "");
  EXPECT_EQ(access((out + ".partial").c_str(), F_OK), -1);
  for (const std::string &path : {a, b, out})
    std::remove(path.c_str());
}

// Another architecture or vocabulary is refused, naming the file.
TEST(Average, RefusesAnotherModelNamingTheFile) {
  std::string a = savedSession(tinyOptions(1), "a2");
  TrainOptions wider = tinyOptions(1);
  wider.model.hidden = 10;
  std::string b = savedSession(wider, "wider");
  TrainOptions fewer = tinyOptions(1);
  fewer.tgtVocabMax = 12;
  std::string c = savedSession(fewer, "vocab");
  std::string error = errorOf([&] { averageCheckpoints({a, b}); });
  EXPECT_NE(error.find(b + ": --hidden (10 against 8) differs from " + a),
            std::string::npos)
      << error;
  error = errorOf([&] { averageCheckpoints({a, c}); });
  EXPECT_NE(error.find(c + ": target vocabulary"), std::string::npos) << error;
  auto first = Session::load(a), other = Session::load(c);
  EXPECT_NE(errorOf([&] { checkSameVocabularies(*first, a, *other, c); }), "");
  for (const std::string &path : {a, b, c})
    std::remove(path.c_str());
}

// --n-best beyond the beam, or 0, is an error; the n-best lists of lines
// come back best first, as many as asked for at most.
TEST(Translator, NBestLinesOfASession) {
  std::string a = savedSession(tinyOptions(1), "nbest");
  auto session = Session::load(a);
  DecodeOptions options;
  options.beam = 3;
  options.nBest = 3;
  auto lists =
      translateLines({session.get()}, {"one", "twenty - two"}, options);
  ASSERT_EQ(lists.size(), 2u);
  for (const auto &list : lists) {
    ASSERT_FALSE(list.empty());
    EXPECT_LE(list.size(), 3u);
    for (size_t k = 1; k < list.size(); ++k)
      EXPECT_GE(list[k - 1].score, list[k].score);
  }
  auto best = session->translate({"one", "twenty - two"}, 3, 1.f, 32);
  EXPECT_EQ(best[0], lists[0][0].text);
  options.nBest = 4;
  EXPECT_THROW(translateLines({session.get()}, {"one"}, options), DataError);
  std::remove(a.c_str());
}
