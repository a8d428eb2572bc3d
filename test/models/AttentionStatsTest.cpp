//===- AttentionStatsTest.cpp - nmt analyze's attention summary -----------===//
//
// The summary on weights whose answers are known (uniform, the diagonal,
// the anti-diagonal, masked rows and columns), and a real model's recorded
// weights: each target step's a distribution over its own source only.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/AttentionStats.h"
#include "models/common/Cells.h"
#include "models/nmt/Model.h"

#include "test/models/TinyRun.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace nmt;

namespace {

/// alpha [Ty, Tx, B] of one sentence (B = 1) from rows [Ty][Tx].
std::vector<float> oneSentence(const std::vector<std::vector<float>> &rows) {
  std::vector<float> alpha;
  for (const std::vector<float> &row : rows)
    alpha.insert(alpha.end(), row.begin(), row.end());
  return alpha;
}

TEST(AttentionStats, UniformWeightsAreAllEntropy) {
  AttentionStats stats(0);
  stats.add(
      oneSentence({{0.25f, 0.25f, 0.25f, 0.25f}, {0.25f, 0.25f, 0.25f, 0.25f}}),
      2, 4, {4}, {2});
  EXPECT_EQ(stats.steps(), 2);
  EXPECT_NEAR(stats.entropy(), std::log(4.0), 1e-6);
  EXPECT_NEAR(stats.normalizedEntropy(), 1.0, 1e-6);
  EXPECT_NEAR(stats.maxWeight(), 0.25, 1e-6);
  EXPECT_NEAR(stats.onLastWord(), 0.25, 1e-6);
  EXPECT_TRUE(stats.examples().empty());
}

TEST(AttentionStats, DiagonalAndAntiDiagonal) {
  AttentionStats diagonal(0), reversed(0);
  diagonal.add(oneSentence({{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}), 3, 3, {3}, {3});
  reversed.add(oneSentence({{0, 0, 1}, {0, 1, 0}, {1, 0, 0}}), 3, 3, {3}, {3});
  EXPECT_NEAR(diagonal.entropy(), 0.0, 1e-9);
  EXPECT_NEAR(diagonal.maxWeight(), 1.0, 1e-9);
  EXPECT_NEAR(diagonal.diagonalDistance(), 0.0, 1e-9);
  EXPECT_NEAR(diagonal.onLastWord(), 1.0 / 3, 1e-9);
  // Rows 0 and 2 are a whole sentence off, row 1 on it.
  EXPECT_NEAR(reversed.diagonalDistance(), 2.0 / 3, 1e-9);
  EXPECT_NEAR(reversed.onLastWord(), 1.0 / 3, 1e-9);
}

// Two sentences in one batch: the second's source (2 words) and target (1
// word) are shorter, so its masked columns and padded rows count nothing.
TEST(AttentionStats, MaskedColumnsAndPaddedRowsCountNothing) {
  const int64_t Ty = 2, Tx = 3, B = 2;
  std::vector<float> alpha(Ty * Tx * B, 0.f);
  auto at = [&](int64_t j, int64_t t, int64_t b) -> float & {
    return alpha[(j * Tx + t) * B + b];
  };
  at(0, 0, 0) = at(1, 2, 0) = 1;    // sentence 0: the diagonal
  at(0, 0, 1) = at(0, 1, 1) = 0.5f; // sentence 1: uniform over 2 words
  at(1, 0, 1) = at(1, 1, 1) = 0.5f; // a padded row: not counted
  AttentionStats stats(1);
  stats.add(alpha, Ty, Tx, {3, 2}, {2, 1}, {{"a", "b", "</s>"}, {"c", "</s>"}},
            {{"x", "</s>"}, {"</s>"}});
  EXPECT_EQ(stats.steps(), 3);
  EXPECT_NEAR(stats.normalizedEntropy(), 1.0 / 3, 1e-6);
  EXPECT_NEAR(stats.onLastWord(), (0 + 1 + 0.5) / 3, 1e-6);
  ASSERT_EQ(stats.examples().size(), 1u); // keep = 1
  const AttentionStats::Example &kept = stats.examples()[0];
  EXPECT_EQ(kept.source, (std::vector<std::string>{"a", "b", "</s>"}));
  EXPECT_EQ(kept.target, (std::vector<std::string>{"x", "</s>"}));
  ASSERT_EQ(kept.weights.size(), 2u);
  EXPECT_EQ(kept.weights[1], (std::vector<double>{0, 0, 1}));
}

ModelConfig tinyConfig(const std::string &arch) {
  return test::tinyModelConfig("gru", arch);
}

// Forced decoding records, for every target step, a distribution over the
// sentence's own source words: zero beyond its length, summing to 1.
TEST(AttentionStats, ModelRecordsEachStepsWeights) {
  Model model(tinyConfig("rnnsearch"), models::loadCell("gru"));
  model.initialize(3, cellrt::InitScheme::uniform(0.5f));
  Batch batch =
      makeBatch({{{4, 5, 6, 7}, {4, 5, 6}}, {{8, 4}, {7, 4, 5, 6}}}, {0, 1});
  std::vector<float> alpha;
  ASSERT_TRUE(model.recordAttention(&alpha));
  model.loss(batch, false, nullptr);
  model.recordAttention(nullptr);
  ASSERT_EQ(int64_t(alpha.size()), batch.Ty * batch.Tx * batch.B);
  for (int64_t b = 0; b < batch.B; ++b)
    for (int64_t j = 0; j < batch.tgtLen[b]; ++j) {
      double sum = 0;
      for (int64_t t = 0; t < batch.Tx; ++t) {
        float w = alpha[(j * batch.Tx + t) * batch.B + b];
        if (t >= batch.srcLen[b])
          EXPECT_EQ(w, 0.f) << "masked word " << t << " of sentence " << b;
        sum += w;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5) << "step " << j << " of sentence " << b;
    }
  // Stopped: a later forward, of another batch, leaves the array alone
  // (recording it would change its size and values).
  std::vector<float> before = alpha;
  model.loss(makeBatch({{{5, 6}, {7}}}, {0}), false, nullptr);
  EXPECT_EQ(alpha, before);
}

TEST(AttentionStats, ModelsWithoutOneAttentionRecordNothing) {
  Model cyclic(tinyConfig("cseq2seq-1"), models::loadCell("gru"));
  std::vector<float> alpha;
  EXPECT_FALSE(cyclic.recordAttention(&alpha));
}

} // namespace
