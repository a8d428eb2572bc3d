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

Worst checkGradients(const std::string &cellName, bool broken,
                     const std::string &arch = "rnnsearch") {
  ModelConfig config;
  config.cell = cellName;
  config.arch = arch;
  config.srcVocab = 9;
  config.tgtVocab = 8;
  config.emb = 4;
  config.hidden = 5;
  config.att = 3;
  config.readout = 4;
  config.dropout = 0;
  Model model(config, loadCell(cellName));
  model.breakGradientForTest = broken;
  Rng rng(11);
  model.initialize(rng, 0.5f);
  Batch batch = tinyBatch();
  auto params = model.params();
  zeroGrads(params);
  model.loss(batch, true, nullptr);
  auto meanLoss = [&]() {
    return model.loss(batch, false, nullptr) / double(batch.targetTokens);
  };
  return compareWithFiniteDifferences(params, meanLoss, 1e-2f);
}

class GradientTest : public testing::TestWithParam<std::string> {};

TEST_P(GradientTest, WholeModelMatchesFiniteDifferences) {
  Worst worst = checkGradients(GetParam(), false);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

INSTANTIATE_TEST_SUITE_P(Cells, GradientTest,
                         testing::Values("atr", "gru", "lstm", "ran", "lau",
                                         "rnn", "deeptrans", "sru", "srnmt"));

// The context-aware encoder (--arch ca) in the whole model.
class ContextAwareGradientTest : public testing::TestWithParam<std::string> {};

TEST_P(ContextAwareGradientTest, WholeModelMatchesFiniteDifferences) {
  Worst worst = checkGradients(GetParam(), false, "ca");
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

INSTANTIATE_TEST_SUITE_P(Cells, ContextAwareGradientTest,
                         testing::Values("atr", "gru", "lstm"));

TEST(GradientCheck, CatchesABrokenBackward) {
  Worst worst = checkGradients("atr", true);
  EXPECT_GT(worst.error, 1e-1) << worst.where;
}

TEST(GradientCheck, BeamOneEqualsGreedyArgmax) {
  // Decoding runs Cell::step; a beam of 4 must return hypotheses no worse
  // (by the model's own normalised score) than greedy, and both must end.
  ModelConfig config;
  config.srcVocab = 9;
  config.tgtVocab = 8;
  config.emb = 4;
  config.hidden = 5;
  config.att = 3;
  config.readout = 4;
  Model model(config, loadCell("atr"));
  Rng rng(3);
  model.initialize(rng, 0.5f);
  Batch batch = makeSourceBatch({{4, 5, 6}, {7, 8}}, {0, 1});
  auto greedy = model.translate(batch, 1, 12, 1.0f);
  auto beam = model.translate(batch, 4, 12, 1.0f);
  ASSERT_EQ(greedy.size(), 2u);
  ASSERT_EQ(beam.size(), 2u);
  for (const auto &hyp : greedy)
    EXPECT_LE(hyp.size(), 16u);
}

} // namespace
