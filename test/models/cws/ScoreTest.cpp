//===- ScoreTest.cpp - The bakeoff scores by hand, and the baseline -------===//

#include "models/cws/Baseline.h"
#include "models/cws/Score.h"
#include "models/cws/Text.h"
#include "TestFiles.h"

#include <cmath>
#include <random>

using namespace cws;
using namespace cws::test;

namespace {

using Strings = std::vector<std::string>;

TEST(Score, OneLineByHand) {
  // Gold 6 words, test 5; the test merged 新 世纪 into one word.
  Strings gold = {"共同", "创造", "美好", "的", "新", "世纪"};
  Strings test = {"共同", "创造", "美好", "的", "新世纪"};
  WordSet vocabulary = {"共同", "创造", "美好", "的", "新"};
  ScoreCounts c = scoreLine(gold, test, vocabulary);
  EXPECT_EQ(c.correct, 4);
  EXPECT_DOUBLE_EQ(c.recall(), 4.0 / 6);
  EXPECT_DOUBLE_EQ(c.precision(), 4.0 / 5);
  EXPECT_DOUBLE_EQ(c.f1(), 2 * (4.0 / 6) * (4.0 / 5) / (4.0 / 6 + 4.0 / 5));
  // 世纪 is the only OOV word, and it was missed.
  EXPECT_DOUBLE_EQ(c.oovRate(), 1.0 / 6);
  EXPECT_DOUBLE_EQ(c.oovRecall(), 0.0);
  EXPECT_DOUBLE_EQ(c.ivRecall(), 4.0 / 5);
  // diff pairs 新 with 新世纪 (a substitution) and deletes 世纪.
  EXPECT_EQ(c.substitutions, 1);
  EXPECT_EQ(c.deletions, 1);
  EXPECT_EQ(c.insertions, 0);
}

TEST(Score, AlignsWordsAsDiffDoes) {
  // A longest common subsequence of words, not of positions: "aa a"
  // against "a aa" keeps one word.
  ScoreCounts c = scoreLine({"aa", "a"}, {"a", "aa"}, {});
  EXPECT_EQ(c.correct, 1);
  EXPECT_EQ(c.insertions + c.deletions + c.substitutions, 2);
  // Splitting one word into three: one substitution, two insertions.
  c = scoreLine({"x", "abc", "y"}, {"x", "a", "b", "c", "y"}, {"x", "y"});
  EXPECT_EQ(c.correct, 2);
  EXPECT_EQ(c.substitutions, 1);
  EXPECT_EQ(c.insertions, 2);
  EXPECT_DOUBLE_EQ(c.oovRecall(), 0.0);
  EXPECT_DOUBLE_EQ(c.ivRecall(), 1.0);
}

// A long line is aligned in linear memory (a 30,000-character line once
// took 3.6 GB); any longest alignment keeps as many words as the full
// table's, and its edits add up.
TEST(Score, LinearMemoryAlignmentKeepsAsManyWords) {
  std::mt19937 rng(7);
  Strings words = {"a", "b", "ab", "ba", "c"};
  for (int round = 0; round < 300; ++round) {
    Strings gold, test;
    for (size_t k = rng() % 40; k-- > 0;)
      gold.push_back(words[rng() % words.size()]);
    for (size_t k = rng() % 40; k-- > 0;)
      test.push_back(words[rng() % words.size()]);
    WordSet vocabulary = {"a", "ab"};
    ScoreCounts dense = scoreLine(gold, test, vocabulary, size_t(-1));
    ScoreCounts linear = scoreLine(gold, test, vocabulary, 0);
    ASSERT_EQ(linear.correct, dense.correct) << "round " << round;
    EXPECT_EQ(linear.oov, dense.oov);
    EXPECT_EQ(linear.ivRecalled + linear.oovRecalled, linear.correct);
    EXPECT_EQ(linear.deletions + linear.substitutions,
              linear.goldWords - linear.correct);
    EXPECT_EQ(linear.insertions + linear.substitutions,
              linear.testWords - linear.correct);
  }
  // The by-hand line, both ways.
  Strings gold = {"共同", "创造", "美好", "的", "新", "世纪"};
  Strings test = {"共同", "创造", "美好", "的", "新世纪"};
  ScoreCounts c = scoreLine(gold, test, {}, 0);
  EXPECT_EQ(c.correct, 4);
  EXPECT_EQ(c.substitutions, 1);
  EXPECT_EQ(c.deletions, 1);
}

TEST(Score, FilesSkipEmptyGoldLinesAndCheckAlignment) {
  WordSet vocabulary = {"中国"};
  ScoreCounts c = scoreLines({"中国  人民", "", "好"}, {"中国人民", "", "好"},
                             vocabulary, "gold", "test");
  EXPECT_EQ(c.goldWords, 3);
  EXPECT_EQ(c.testWords, 2);
  EXPECT_EQ(c.correct, 1);
  // Blank lines at the end do not count; others do.
  EXPECT_EQ(scoreLines({"好", ""}, {"好"}, vocabulary, "g", "t").correct, 1);
  EXPECT_NE(errorOf([&] {
              scoreLines({"好", "", "的"}, {"好"}, vocabulary, "g", "t");
            }).find("different line counts: g has 3 lines, t has 1"),
            std::string::npos);
  EXPECT_NE(errorOf([&] {
              scoreLines({"中国  人民"}, {"中国  人"}, vocabulary, "g", "t");
            }).find("t:1: the characters differ from g:1"),
            std::string::npos);
}

TEST(Score, PrintsTheScriptsSummary) {
  ScoreCounts c = scoreLine({"a", "b"}, {"a", "b"}, {"a", "b"});
  std::string text = formatScore(c);
  EXPECT_NE(text.find("=== F MEASURE:\t1.000\n"), std::string::npos) << text;
  // No OOV word: the script prints "--".
  EXPECT_NE(text.find("=== OOV Recall Rate:\t--\n"), std::string::npos);
  EXPECT_NE(formatScore(c, 5).find("=== IV Recall Rate:\t1.00000\n"),
            std::string::npos);
}

TEST(Baseline, LongestWordFirst) {
  MaxMatch matcher({"中国", "中国人", "人民", "人", "国人"});
  EXPECT_EQ(matcher.longestWord(), 3u);
  Sentence s = tagWords({"中国人民很好"});
  s.tags.clear();
  EXPECT_EQ(matcher.segment(s), (Strings{"中国人", "民", "很", "好"}));
}

TEST(Baseline, SpacesAreBoundaries) {
  MaxMatch matcher({"中国人", "人民"});
  auto path = writeFile("mm.txt", "中国 人民\n");
  Sentence s = readToSegment(path)[0];
  EXPECT_EQ(matcher.segment(s), (Strings{"中", "国", "人民"}));
}

} // namespace
