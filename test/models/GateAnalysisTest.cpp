//===- GateAnalysisTest.cpp - Eq. 10 weights and gate correlations --------===//
//
// The ATR paper's analyses (models/common/GateAnalysis.h) on the compiled
// ATR cell with probes: the Eq. 10 weights must rebuild the cell's own
// state, and a built-in cell recompiled with probes is the same cell.
//
//===----------------------------------------------------------------------===//

#include "models/common/Cells.h"
#include "models/common/Data.h"
#include "models/common/GateAnalysis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

constexpr int64_t T = 7, B = 2, I = 5, H = 4;

std::vector<float> randomValues(int64_t count, unsigned seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  std::vector<float> values(count);
  for (float &value : values)
    value = uniform(rng);
  return values;
}

/// Row b of a [T, B, width] array as [T, width].
std::vector<float> sequenceOf(const std::vector<float> &array, int64_t b,
                              int64_t width) {
  std::vector<float> rows;
  for (int64_t t = 0; t < T; ++t)
    rows.insert(rows.end(), array.begin() + (t * B + b) * width,
                array.begin() + (t * B + b + 1) * width);
  return rows;
}

struct AtrRun {
  std::vector<float> x = randomValues(T * B * I, 1, 1.0f),
                     Wx = randomValues(H * I, 2, 0.7f),
                     Wh = randomValues(H * H, 3, 0.7f),
                     out = std::vector<float>(T * B * H);
  std::vector<std::vector<float>> probes;
  std::vector<int32_t> lengths = std::vector<int32_t>(B, T);

  void run(const cellrt::Cell &cell) {
    cellrt::ForwardArgs args;
    args.inputs = {{x.data(), {T, B, I}}};
    args.lengths = lengths.data();
    args.params = {{"Wx", {Wx.data(), {H, I}}}, {"Wh", {Wh.data(), {H, H}}}};
    args.output = {out.data(), {T, B, H}};
    probes.assign(cell.getPlan().probes.size(),
                  std::vector<float>(T * B * H));
    for (std::vector<float> &probe : probes)
      args.probes.push_back({probe.data(), {T, B, H}});
    cellrt::Status status = cell.forward(args);
    ASSERT_TRUE(status.ok()) << status.message();
  }
};

// ATR: h_t = i_t * p_t + f_t * h_{t-1}, h_0 = 0, so the weights of Eq. 10
// times the candidates p_k are the state, to float32 rounding.
TEST(GateAnalysis, Eq10WeightsRebuildTheAtrState) {
  AtrRun run;
  run.run(models::loadProbedCell("atr", "", {"i", "f", "p"}));
  for (int64_t b = 0; b < B; ++b) {
    std::vector<float> i = sequenceOf(run.probes[0], b, H),
                       f = sequenceOf(run.probes[1], b, H),
                       p = sequenceOf(run.probes[2], b, H),
                       h = sequenceOf(run.out, b, H);
    models::AdditiveWeights weights(i.data(), f.data(), T, H);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<double> rebuilt = weights.state(t, p.data());
      for (int64_t j = 0; j < H; ++j)
        EXPECT_NEAR(rebuilt[j], h[t * H + j], 1e-5 * (1 + std::fabs(h[t * H + j])))
            << "t=" << t << " j=" << j;
    }
    // g_t^t = i_t: a word's own weight is its input gate.
    EXPECT_EQ(weights.weight(3, 3)[1], i[3 * H + 1]);
  }
}

TEST(GateAnalysis, ProbedBuiltinIsTheSameCell) {
  AtrRun plain, probed;
  plain.run(models::loadCell("atr"));
  probed.run(models::loadProbedCell("atr", "", {"f"}));
  EXPECT_EQ(plain.out, probed.out);
  EXPECT_THROW(models::loadProbedCell("atr", "", {"nope"}), models::DataError);
}

TEST(GateAnalysis, StrongestEarlierWordFollowsTheLargestWeight) {
  // One unit. At step 2 the earlier words weigh 0.9*0.9*0.1 (step 0) and
  // 0.2*0.1 (step 1); at step 3 step 2's 0.5*0.95 outweighs both.
  std::vector<float> i = {0.9f, 0.2f, 0.5f, 0.1f};
  std::vector<float> f = {0.0f, 0.9f, 0.1f, 0.95f};
  models::AdditiveWeights weights(i.data(), f.data(), 4, 1);
  EXPECT_EQ(weights.strongestEarlier(), (std::vector<int64_t>{-1, 0, 0, 2}));
  EXPECT_NEAR(weights.meanWeight(1, 0), 0.9 * 0.9, 1e-7);
  EXPECT_NEAR(weights.meanWeight(3, 0), 0.9 * 0.9 * 0.1 * 0.95, 1e-7);
  // The one-pass table agrees with the weights one by one.
  std::vector<std::vector<double>> table = weights.meanWeights();
  for (int64_t t = 0; t < 4; ++t)
    for (int64_t k = 0; k <= t; ++k)
      EXPECT_NEAR(table[t][k], weights.meanWeight(t, k), 1e-12) << t << k;
}

TEST(GateAnalysis, PearsonOfPerfectAndNoCorrelation) {
  EXPECT_NEAR(models::pearson({1, 2, 3, 4}, {8, 6, 4, 2}), -1.0, 1e-12);
  // cov 4.5, variances 2 and 61/6.
  EXPECT_NEAR(models::pearson({1, 2, 3}, {2, 4, 6.5}),
              4.5 / std::sqrt(2 * 61.0 / 6), 1e-12);
  EXPECT_EQ(models::pearson({1, 1, 1}, {1, 2, 3}), 0.0);
}

} // namespace
