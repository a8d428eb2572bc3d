//===- GradientTest.cpp - The whole segmenter against finite differences --===//
//
// Central differences of the mean per-sentence loss on a few coordinates of
// every parameter (the largest analytic gradients and some random ones), at
// tiny sizes, for each built-in cell and both CRF losses. The max-margin
// loss is piecewise linear: its differences are exact away from the kinks,
// which a step of 1e-3 does not reach on this batch. A model with a
// deliberately broken backward must fail the same check.
//
//===----------------------------------------------------------------------===//

#include "models/common/Cells.h"
#include "models/cws/Model.h"
#include "models/cws/Options.h"

#include "test/models/ParamChecks.h"
#include "test/models/TestCells.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace cws;
using modeltest::compareWithFiniteDifferences;
using modeltest::Worst;
using models::CrfLoss;
using models::Param;

namespace {

/// Three sentences; with `features`, each character has Lexicon::Width
/// word-list features drawn at random.
CharBatch tinyBatch(bool features = false) {
  std::vector<Encoded> sentences = {
      {{4, 5, 6, 7, 8}, {B, E, S, B, E}, {}},
      {{8, 4}, {S, S}, {}},
      {{5, 6, 7}, {B, M, E}, {}},
  };
  models::Rng rng(9);
  for (Encoded &s : sentences)
    for (size_t i = 0; features && i < s.ids.size() * Lexicon::Width; ++i)
      s.features.push_back(float(rng.below(2)));
  return makeCharBatch(sentences, {0, 1, 2});
}

ModelConfig tinyConfig(const std::string &cell, CrfLoss loss) {
  ModelConfig config;
  config.cell = cell;
  config.vocab = 9;
  config.emb = 4;
  config.hidden = 5;
  config.dropout = 0;
  config.loss = loss;
  return config;
}

Worst checkGradients(const std::string &cell, CrfLoss loss, bool broken,
                     bool features = false, int64_t layers = 1) {
  ModelConfig config = tinyConfig(cell, loss);
  config.features = features ? Lexicon::Width : 0;
  config.layers = layers;
  Model model(config, models::loadCell(cell));
  model.breakGradientForTest = broken;
  models::Rng rng(11);
  model.initialize(rng.next(), cellrt::InitScheme::uniform(0.5f));
  CharBatch batch = tinyBatch(features);
  auto params = model.params();
  models::zeroGrads(params);
  model.loss(batch, true, nullptr);
  auto meanLoss = [&] {
    return model.loss(batch, false, nullptr) / double(batch.B);
  };
  EXPECT_GT(meanLoss(), 0.1) << "a zero loss checks nothing";
  return compareWithFiniteDifferences(
      params, meanLoss, loss == CrfLoss::MaxMargin ? 1e-3f : 1e-2f);
}

class CwsGradientTest : public testing::TestWithParam<std::string> {};

TEST_P(CwsGradientTest, MaxMarginMatchesFiniteDifferences) {
  Worst worst = checkGradients(GetParam(), CrfLoss::MaxMargin, false);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

TEST_P(CwsGradientTest, LogLikelihoodMatchesFiniteDifferences) {
  Worst worst = checkGradients(GetParam(), CrfLoss::NegativeLogLikelihood,
                               false);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

TEST_P(CwsGradientTest, WordListFeaturesMatchFiniteDifferences) {
  Worst worst = checkGradients(GetParam(), CrfLoss::MaxMargin, false, true);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

// Two stacked layers, the second reading tanh of the first's states.
TEST_P(CwsGradientTest, TwoLayersMatchFiniteDifferences) {
  Worst worst =
      checkGradients(GetParam(), CrfLoss::MaxMargin, false, false, 2);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

// A cell's declared forget bias 1 holds in cws's model too.
TEST(CwsInit, DeclaredForgetBiasIsOne) {
  Model model(tinyConfig(modeltest::kLstmForgetBiasOne, CrfLoss::MaxMargin),
              models::loadCell(modeltest::kLstmForgetBiasOne));
  model.initialize(3, cellrt::InitScheme::fanIn());
  int found = 0;
  for (Param *p : model.params())
    if (p->name.size() > 3 && p->name.substr(p->name.size() - 3) == ".bf") {
      ++found;
      for (float x : p->value)
        ASSERT_EQ(x, 1.f) << p->name;
    }
  EXPECT_EQ(found, 2); // both directions
}

// The same seed gives cws's model the same params, another seed others.
TEST(CwsInit, SameSeedSameParamsOtherSeedOthers) {
  const auto &cell = models::loadCell("lstm");
  Model a(tinyConfig("lstm", CrfLoss::MaxMargin), cell),
      b(tinyConfig("lstm", CrfLoss::MaxMargin), cell),
      c(tinyConfig("lstm", CrfLoss::MaxMargin), cell);
  a.initialize(3, cellrt::InitScheme::fanIn());
  b.initialize(3, cellrt::InitScheme::fanIn());
  c.initialize(4, cellrt::InitScheme::fanIn());
  auto pa = a.params(), pb = b.params(), pc = c.params();
  ASSERT_EQ(pa.size(), pc.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i]->value, pb[i]->value) << pa[i]->name;
    if (pa[i]->init.isNone())
      EXPECT_NE(pa[i]->value, pc[i]->value) << pa[i]->name;
  }
}

// A checkpoint from before --between-layers passed raw states.
TEST(CwsOptions, OldCheckpointsKeepRawStatesBetweenLayers) {
  TrainOptions o;
  EXPECT_TRUE(o.modelConfig(9, false).squashBetweenLayers);
  models::OptionMap map = o.toMap();
  map.erase("between-layers");
  EXPECT_FALSE(TrainOptions::fromMap(map).modelConfig(9, false)
                   .squashBetweenLayers);
}

INSTANTIATE_TEST_SUITE_P(Cells, CwsGradientTest,
                         testing::Values("atr", "gru", "lstm"));

TEST(CwsGradientCheck, CatchesABrokenBackward) {
  Worst worst = checkGradients("atr", CrfLoss::NegativeLogLikelihood, true);
  EXPECT_GT(worst.error, 1e-1) << worst.where;
}

TEST(CwsModel, DecodesEverySentenceToItsLength) {
  Model model(tinyConfig("gru", CrfLoss::MaxMargin), models::loadCell("gru"));
  models::Rng rng(3);
  model.initialize(rng.next(), cellrt::InitScheme::uniform(0.5f));
  CharBatch batch = tinyBatch();
  auto tags = model.decode(batch);
  ASSERT_EQ(tags.size(), 3u);
  for (int64_t b = 0; b < 3; ++b)
    EXPECT_EQ(int64_t(tags[b].size()), int64_t(batch.lengths[b]));
  // Dropout at evaluation is the identity: decoding twice agrees.
  EXPECT_EQ(model.decode(batch), tags);
}

} // namespace

namespace {

TEST(CwsModel, PaddingDoesNotChangeASentence) {
  // A short sentence batched with a long one scores as it does alone: the
  // backward direction starts at each sentence's own end.
  for (const char *cell : {"atr", "gru", "lstm"}) {
    Model model(tinyConfig(cell, CrfLoss::MaxMargin), models::loadCell(cell));
    models::Rng rng(7);
    model.initialize(rng.next(), cellrt::InitScheme::uniform(0.5f));
    std::vector<Encoded> sentences = {{{4, 5}, {B, E}},
                                      {{8, 7, 6, 5, 4, 8}, {S, B, M, E, B, E}}};
    double alone = model.loss(makeCharBatch(sentences, {0}), false, nullptr) +
                   model.loss(makeCharBatch(sentences, {1}), false, nullptr);
    double together =
        model.loss(makeCharBatch(sentences, {0, 1}), false, nullptr);
    EXPECT_NEAR(alone, together, 1e-5 * std::fabs(alone)) << cell;
  }
}

} // namespace
