//===- test/models/BeamSearchTest.cpp - Beam search's bookkeeping ---------===//
//
// BeamSearch keeps each sentence's best K extensions of its live rows. The
// row scan skips words that cannot enter a row's best 2K (16 at a time);
// these tests check what it keeps against a full sort of every candidate.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/BeamSearch.h"
#include "models/common/Math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

using nmt::BeamSearch;

namespace {

constexpr float MinusInf = -std::numeric_limits<float>::infinity();

TEST(FirstAbove, FindsTheFirstElementAboveInEveryLaneAndTheTail) {
  const int64_t n = 37; // two chunks of 16 and a tail of 5
  for (int64_t hot = 0; hot < n; ++hot)
    for (int64_t begin : {int64_t(0), hot, hot + 1}) {
      std::vector<float> x(n, 0.f);
      x[hot] = 2.f;
      int64_t expected = begin <= hot ? hot : n;
      EXPECT_EQ(models::firstAbove(x.data(), begin, n, 1.f), expected)
          << "hot " << hot << ", begin " << begin;
    }
  std::vector<float> equal(40, 1.f);
  EXPECT_EQ(models::firstAbove(equal.data(), 0, 40, 1.f), 40)
      << "equal is not above";
  std::vector<float> nan(20, std::nanf(""));
  EXPECT_EQ(models::firstAbove(nan.data(), 0, 20, MinusInf), 20);
}

/// The previous words of the rows a full sort keeps: every live row's
/// score plus every word's log-probability, best first; of the best 2K,
/// </s> ends a hypothesis and the others fill the K rows.
std::vector<int32_t> keptBySort(const std::vector<float> &scores,
                                const std::vector<float> &logProbs,
                                int64_t vocab, int64_t K,
                                std::vector<float> *keptScores) {
  struct Entry {
    float score;
    int32_t word;
  };
  std::vector<Entry> all;
  for (size_t r = 0; r < scores.size(); ++r)
    for (int64_t w = 0; w < vocab; ++w)
      if (w != models::Vocab::Pad && w != models::Vocab::Bos)
        all.push_back({scores[r] + logProbs[r * vocab + w], int32_t(w)});
  std::sort(all.begin(), all.end(),
            [](const Entry &x, const Entry &y) { return x.score > y.score; });
  all.resize(std::min(all.size(), size_t(2 * K)));
  std::vector<int32_t> words;
  keptScores->clear();
  for (const Entry &entry : all)
    if (entry.word != models::Vocab::Eos && int64_t(words.size()) < K) {
      words.push_back(entry.word);
      keptScores->push_back(entry.score);
    }
  return words;
}

TEST(BeamSearch, KeepsWhatAFullSortOfEveryCandidateKeeps) {
  // 1,003 words: the row scan's chunks of 16 end in a tail. Distinct
  // continuous scores, a few -inf, and </s> among the best every other step.
  const int64_t vocab = 1003, K = 5;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> logProb(-20.f, -0.1f);
  BeamSearch search({6}, K, 1.f);
  std::vector<float> scores = {0.f};
  for (int step = 0; step < 5; ++step) {
    ASSERT_TRUE(search.nextStep());
    const int64_t n = search.activeCount();
    ASSERT_EQ(n, int64_t(scores.size()));
    std::vector<float> rows(n * vocab);
    for (float &value : rows)
      value = logProb(rng);
    for (int64_t r = 0; r < n; ++r)
      rows[r * vocab + 17 + r] = MinusInf;
    // One hypothesis ends every other step (K ending would end the search).
    if (step % 2 == 1)
      rows[models::Vocab::Eos] = -0.01f;
    std::vector<float> keptScores;
    std::vector<int32_t> expected =
        keptBySort(scores, rows, vocab, K, &keptScores);
    search.advance(rows.data(), vocab);
    ASSERT_TRUE(search.nextStep());
    std::vector<int32_t> words = search.previousWords();
    EXPECT_EQ(words, expected) << "step " << step;
    scores = keptScores;
  }
}

TEST(BeamSearch, TiedScoresKeepTheBestScores) {
  // Log-probabilities on a coarse grid: many ties at the cut. Which tied
  // word is kept is the heap's choice; the scores kept must be the best.
  const int64_t vocab = 300, K = 4;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> level(-8, -1);
  BeamSearch search({3}, K, 1.f);
  ASSERT_TRUE(search.nextStep());
  std::vector<float> row(vocab);
  for (float &value : row)
    value = float(level(rng));
  row[models::Vocab::Eos] = -9.f;
  std::vector<float> expectedScores;
  keptBySort({0.f}, row, vocab, K, &expectedScores);
  search.advance(row.data(), vocab);
  ASSERT_TRUE(search.nextStep());
  std::vector<float> kept;
  for (int32_t word : search.previousWords())
    kept.push_back(row[word]);
  EXPECT_EQ(kept, expectedScores);
}

} // namespace
