//===- GradientTest.cpp - The whole NMT model against finite differences --===//
//
// Central differences of the mean per-token loss, in float32, on a few
// coordinates of every parameter (the largest analytic gradients and some
// random ones), at tiny sizes, for each built-in cell. A model with a
// deliberately broken backward must fail the same check.
//
//===----------------------------------------------------------------------===//

#include "models/common/Cells.h"
#include "models/nmt/Model.h"

#include "test/models/ParamChecks.h"

#include "test/models/TestCells.h"
#include "test/models/TinyRun.h"

#include <gtest/gtest.h>

using namespace nmt;
using modeltest::compareWithFiniteDifferences;
using modeltest::Worst;

namespace {

Batch tinyBatch() {
  std::vector<Example> examples = {
      {{4, 5, 6, 7}, {4, 5, 6}},
      {{8, 4}, {7, 4, 5, 6, 4}},
      {{5, 6, 7}, {6}},
  };
  return makeBatch(examples, {0, 1, 2});
}

ModelConfig tinyConfig(const std::string &cellName, const std::string &arch,
                       int64_t layers, const std::string &context = "last") {
  return test::tinyModelConfig(cellName, arch, layers, context);
}

Worst checkGradients(TranslationModel &model, float h = 1e-2f) {
  Rng rng(17);
  model.initialize(rng.next(), cellrt::InitScheme::uniform(0.5f));
  Batch batch = tinyBatch();
  auto params = model.params();
  zeroGrads(params);
  model.loss(batch, true, nullptr);
  auto meanLoss = [&]() {
    return model.loss(batch, false, nullptr) / double(batch.targetTokens);
  };
  return compareWithFiniteDifferences(params, meanLoss, h);
}

Worst checkGradients(const ModelConfig &config, bool broken = false,
                     const cellrt::Cell *twoSourceCell = nullptr) {
  Model model(config, loadCell(config.cell), twoSourceCell);
  model.breakGradientForTest = broken;
  return checkGradients(model);
}

Worst checkGradients(const std::string &cellName, bool broken,
                     const std::string &arch = "rnnsearch",
                     int64_t layers = 1, const std::string &context = "last") {
  return checkGradients(tinyConfig(cellName, arch, layers, context), broken);
}

class GradientTest : public testing::TestWithParam<std::string> {};

TEST_P(GradientTest, WholeModelMatchesFiniteDifferences) {
  Worst worst = checkGradients(GetParam(), false);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

INSTANTIATE_TEST_SUITE_P(Cells, GradientTest,
                         testing::Values("atr", "gru", "lstm", "ran", "lau",
                                         "rnn", "deeptrans", "sru", "srnmt"));

// --label-smoothing: the smoothed loss's gradient through the whole model
// (RNNSearch and SR-NMT, whose output layers differ), and eps = 0 is the
// unsmoothed loss exactly.
TEST(LabelSmoothingGradientTest, WholeModelMatchesFiniteDifferences) {
  for (const char *arch : {"rnnsearch", "srnmt"}) {
    ModelConfig config = tinyConfig("atr", arch, 1);
    config.emb = config.hidden = 4;
    std::unique_ptr<TranslationModel> model =
        makeModel(config, loadCell(config.cell));
    model->setLabelSmoothing(0.1f);
    Worst worst = checkGradients(*model, 2e-3f);
    EXPECT_LE(worst.error, 1e-2) << arch << ": " << worst.where;

    Batch batch = tinyBatch();
    double smoothed = model->loss(batch, false, nullptr);
    model->setLabelSmoothing(0);
    double plain = model->loss(batch, false, nullptr);
    EXPECT_NE(smoothed, plain) << arch;
    model->setLabelSmoothing(0.1f);
    EXPECT_EQ(model->loss(batch, false, nullptr), smoothed) << arch;
  }
}

// The context-aware encoder (--arch ca) in the whole model.
class ContextAwareGradientTest : public testing::TestWithParam<std::string> {};

TEST_P(ContextAwareGradientTest, WholeModelMatchesFiniteDifferences) {
  Worst worst = checkGradients(GetParam(), false, "ca");
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

INSTANTIATE_TEST_SUITE_P(Cells, ContextAwareGradientTest,
                         testing::Values("atr", "gru", "lstm"));

// The deep architectures at three layers each way, so that GNMT's
// residual connections (from layer 3) are in the model.
class DeepGradientTest
    : public testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(DeepGradientTest, WholeModelMatchesFiniteDifferences) {
  auto [cell, arch] = GetParam();
  Worst worst = checkGradients(cell, false, arch, 3);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

INSTANTIATE_TEST_SUITE_P(
    Cells, DeepGradientTest,
    testing::Combine(testing::Values("atr", "gru", "lstm", "lau", "sru"),
                     testing::Values("gnmt", "deep")));

// Cseq2seq-I: the context from a cell re-reading the annotations at every
// target step, its last output or their mean.
class CyclicGradientTest
    : public testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(CyclicGradientTest, WholeModelMatchesFiniteDifferences) {
  auto [cell, context] = GetParam();
  Worst worst = checkGradients(cell, false, "cseq2seq-1", 1, context);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

// SRU projects the 2H-wide annotations to its H-wide input: it reads them
// each time instead of sharing its input products.
INSTANTIATE_TEST_SUITE_P(
    Cells, CyclicGradientTest,
    testing::Combine(testing::Values("atr", "gru", "lstm", "sru"),
                     testing::Values("last", "mean")));

// Cseq2seq-II: the encoder's cell runs backward for s_0 and forward from
// the query at every step; SGRU shares it with decoder cell 1, SWord ties
// the output weight to the target embeddings (their gradients add up).
class Cseq2seq2GradientTest
    : public testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(Cseq2seq2GradientTest, WholeModelMatchesFiniteDifferences) {
  auto [cell, shared] = GetParam();
  ModelConfig config = tinyConfig(cell, "cseq2seq-2", 1);
  config.shareCell = config.tieOutput = shared;
  Worst worst = checkGradients(config);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

INSTANTIATE_TEST_SUITE_P(Cells, Cseq2seq2GradientTest,
                         testing::Combine(testing::Values("atr", "gru", "lstm"),
                                          testing::Bool()));


// --cell2: a two-input cell reads the two sources of ca's forward encoder
// layer and gnmt's upper decoder layers apart.
class TwoSourceGradientTest : public testing::TestWithParam<std::string> {};

TEST_P(TwoSourceGradientTest, WholeModelMatchesFiniteDifferences) {
  ModelConfig config = tinyConfig("gru", GetParam(), 1);
  if (GetParam() == "gnmt")
    config.encLayers = config.decLayers = 3;
  Worst worst =
      checkGradients(config, false, &loadCell("gru2.cell", modeltest::kTwoInputGru));
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

INSTANTIATE_TEST_SUITE_P(Architectures, TwoSourceGradientTest,
                         testing::Values("ca", "gnmt"));

// Decoding (CellLayer::step over the beam's rows, layer by layer) and
// training (whole sequences) share no code above the cells: beam search
// must score its own output as forced decoding of that output does.
class DecodingTest
    : public testing::TestWithParam<std::tuple<std::string, int64_t>> {};

TEST_P(DecodingTest, SearchScoresEqualForcedDecoding) {
  auto [arch, layers] = GetParam();
  ModelConfig config = tinyConfig("gru", arch, layers);
  config.shareCell = config.tieOutput = arch == "cseq2seq-2";
  if (arch == "srnmt")
    config.emb = config.hidden = 4; // the highways add the inputs
  // gnmt's upper decoder layers run a two-input cell (--cell2).
  std::unique_ptr<TranslationModel> built = makeModel(
      config, loadCell("gru"),
      arch == "gnmt" ? &loadCell("gru2.cell", modeltest::kTwoInputGru)
                     : nullptr);
  TranslationModel &model = *built;
  Rng rng(5);
  model.initialize(rng.next(), cellrt::InitScheme::uniform(0.8f));
  const int64_t maxLength = 6;
  std::vector<std::vector<int32_t>> sources = {{4, 5, 6, 7}, {8, 4}, {5, 6}};
  // Beam 3 starts rows from other rows' states (their parents').
  for (int64_t beam : {1, 3}) {
    std::vector<double> scores;
    auto hyps = model.translate(makeSourceBatch(sources, {0, 1, 2}), beam,
                                maxLength, 0.f, &scores);
    std::vector<Example> examples;
    for (size_t b = 0; b < sources.size(); ++b)
      examples.push_back({sources[b], hyps[b]});
    Batch forced = makeBatch(examples, {0, 1, 2});
    std::vector<float> logProbs = model.targetLogProbs(forced);
    for (size_t b = 0; b < hyps.size(); ++b) {
      // A hypothesis cut at the limit has no </s> in its score.
      size_t scored =
          hyps[b].size() + (hyps[b].size() < size_t(maxLength) ? 1 : 0);
      double sum = 0;
      for (size_t j = 0; j < scored; ++j)
        sum += logProbs[j * forced.B + b];
      EXPECT_NEAR(sum, scores[b], 1e-4 * (1 + std::abs(sum)))
          << "beam " << beam << ", sentence " << b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, DecodingTest,
                         testing::Values(std::tuple{"rnnsearch", 1},
                                         std::tuple{"ca", 1},
                                         std::tuple{"gnmt", 3},
                                         std::tuple{"deep", 3},
                                         std::tuple{"cseq2seq-1", 1},
                                         std::tuple{"cseq2seq-2", 1},
                                         std::tuple{"srnmt", 2}));

// SR-NMT (--arch srnmt) at 2+2 units, and its three ablations. Layer norms
// over 4-12 values curve the loss sharply: central differences step 2e-3
// (1e-2 leaves a truncation error of several per cent).
struct SrnmtCase {
  bool noLayerNorm, noHighway, singleAttention, tieOutput;
};

class SrnmtGradientTest : public testing::TestWithParam<SrnmtCase> {};

TEST_P(SrnmtGradientTest, WholeModelMatchesFiniteDifferences) {
  ModelConfig config = tinyConfig("atr", "srnmt", 2);
  config.emb = config.hidden = 4;
  config.noLayerNorm = GetParam().noLayerNorm;
  config.noHighway = GetParam().noHighway;
  config.singleAttention = GetParam().singleAttention;
  config.tieOutput = GetParam().tieOutput;
  std::unique_ptr<TranslationModel> model =
      makeModel(config, loadCell(config.cell));
  Worst worst = checkGradients(*model, 2e-3f);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

// Without highways the first units read embeddings of another width.
TEST(SrnmtGradientTest, NarrowEmbeddingsWithoutHighways) {
  ModelConfig config = tinyConfig("atr", "srnmt", 2);
  config.emb = 3;
  config.hidden = 4;
  config.noHighway = true;
  std::unique_ptr<TranslationModel> model =
      makeModel(config, loadCell(config.cell));
  Worst worst = checkGradients(*model, 2e-3f);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
  std::vector<double> scores;
  auto hyps = model->translate(makeSourceBatch({{4, 5, 6}, {7}}, {0, 1}), 3,
                               6, 1.f, &scores);
  EXPECT_EQ(hyps.size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Ablations, SrnmtGradientTest,
                         testing::Values(SrnmtCase{false, false, false, false},
                                         SrnmtCase{true, false, false, false},
                                         SrnmtCase{false, true, false, false},
                                         SrnmtCase{false, false, true, false},
                                         SrnmtCase{false, false, false, true}));

TEST(GradientCheck, CatchesABrokenBackward) {
  Worst worst = checkGradients("atr", true);
  EXPECT_GT(worst.error, 1e-1) << worst.where;
}

TEST(GradientCheck, BeamOneEqualsGreedyArgmax) {
  // Decoding runs Cell::step; a beam of 4 must return hypotheses no worse
  // (by the model's own normalised score) than greedy, and both must end.
  Model model(tinyConfig("atr", "rnnsearch", 1), loadCell("atr"));
  Rng rng(3);
  model.initialize(rng.next(), cellrt::InitScheme::uniform(0.5f));
  Batch batch = makeSourceBatch({{4, 5, 6}, {7, 8}}, {0, 1});
  auto greedy = model.translate(batch, 1, 12, 1.0f);
  auto beam = model.translate(batch, 4, 12, 1.0f);
  ASSERT_EQ(greedy.size(), 2u);
  ASSERT_EQ(beam.size(), 2u);
  for (const auto &hyp : greedy)
    EXPECT_LE(hyp.size(), 16u);
}

} // namespace
