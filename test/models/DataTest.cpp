//===- DataTest.cpp - Bad data gives clear errors; batches; the task ------===//

#include "models/common/Data.h"
#include "models/common/Subword.h"
#include "models/nmt/Numbers.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

using namespace models;
using namespace nmt;

namespace {

std::string writeFile(const std::string &name, const std::string &text) {
  std::string path = testing::TempDir() + "nmt-data-" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string errorOf(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const DataError &error) {
    return error.what();
  }
  return "";
}

} // namespace

TEST(Data, DifferentLineCounts) {
  auto a = writeFile("a.en", "one\ntwo\nthree\n");
  auto b = writeFile("b.de", "eins\nzwei\n");
  std::vector<std::string> src, tgt;
  std::string error = errorOf([&] { readParallel(a, b, src, tgt); });
  EXPECT_NE(error.find("different line counts"), std::string::npos) << error;
  EXPECT_NE(error.find(a + " has 3 lines"), std::string::npos) << error;
  EXPECT_NE(error.find(b + " has 2 lines"), std::string::npos) << error;
}

TEST(Data, InvalidUtf8NamesFileAndLine) {
  auto path = writeFile("bad.txt", "ok\nfine\nbad \xC3\x28 here\n");
  std::string error = errorOf([&] { readLines(path); });
  EXPECT_NE(error.find(path + ":3: invalid UTF-8 at byte 5"),
            std::string::npos)
      << error;
  // Truncated sequence at the end of a line, and an overlong encoding.
  EXPECT_GE(findInvalidUtf8("abc\xE2\x82"), 0);
  EXPECT_GE(findInvalidUtf8("\xC0\xAF"), 0);
  EXPECT_EQ(findInvalidUtf8("zwölf dreißig €"), -1);
}

TEST(Data, EmptyAndMissingFiles) {
  auto empty = writeFile("empty.txt", "");
  EXPECT_NE(errorOf([&] { readLines(empty); }).find(empty + ": empty file"),
            std::string::npos);
  std::string missing = testing::TempDir() + "no-such-file.txt";
  EXPECT_NE(errorOf([&] { readLines(missing); }).find(missing + ": cannot open"),
            std::string::npos);
  std::string model = testing::TempDir() + "no-such.model";
  EXPECT_NE(errorOf([&] { Subword::loadFile(model); }).find(model),
            std::string::npos);
  auto garbage = writeFile("garbage.model", "not a model");
  EXPECT_NE(errorOf([&] { Subword::loadFile(garbage); }).find(garbage),
            std::string::npos);
}

TEST(Data, SentencepieceBpeRoundTrip) {
  std::vector<std::string> lines;
  for (int i = 0; i < 200; ++i)
    lines.push_back("a small dog runs over the green grass number " +
                    std::to_string(i % 17) + " zwölf");
  Subword bpe = Subword::train(lines, 60);
  auto pieces = bpe.encode("the green dog runs");
  EXPECT_GT(pieces.size(), 0u);
  EXPECT_EQ(bpe.decode(pieces), "the green dog runs");
  Subword copy = Subword::fromSerialized(bpe.serialized());
  EXPECT_EQ(copy.encode("the green dog runs"), pieces);
}

TEST(Data, BatchesCoverEverythingWithinTheTokenBudget) {
  std::vector<Example> examples;
  Rng rng(1);
  for (int i = 0; i < 500; ++i)
    examples.push_back({std::vector<int32_t>(1 + rng.below(20), 4),
                        std::vector<int32_t>(1 + rng.below(20), 5)});
  Rng order(7);
  auto batches = makeBatchOrder(examples, 200, order);
  std::multiset<int64_t> seen;
  for (const auto &batch : batches) {
    int64_t longest = 0;
    for (int64_t i : batch) {
      seen.insert(i);
      longest = std::max<int64_t>(
          longest, std::max(examples[i].src.size(), examples[i].tgt.size()) + 1);
    }
    EXPECT_LE(longest * int64_t(batch.size()), 200);
  }
  EXPECT_EQ(seen.size(), examples.size());
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(),
            examples.size());
  Rng again(7);
  EXPECT_EQ(makeBatchOrder(examples, 200, again), batches);
  Batch b = makeBatch(examples, batches[0]);
  EXPECT_EQ(b.tgtIn[0], Vocab::Bos);
  EXPECT_EQ(b.tgtOut[(b.tgtLen[0] - 1) * b.B], Vocab::Eos);
}

TEST(Numbers, EnglishAndGerman) {
  EXPECT_EQ(englishNumber(342), "three hundred forty-two");
  EXPECT_EQ(joinTokens(germanNumberTokens(342), ""),
            "dreihundertzweiundvierzig");
  EXPECT_EQ(joinTokens(germanNumberTokens(342)), "drei hundert zwei und vierzig");
  EXPECT_EQ(joinTokens(germanNumberTokens(21), ""), "einundzwanzig");
  EXPECT_EQ(joinTokens(germanNumberTokens(1), ""), "eins");
  EXPECT_EQ(joinTokens(germanNumberTokens(101), ""), "einhunderteins");
  EXPECT_EQ(joinTokens(germanNumberTokens(1001), ""), "eintausendeins");
  EXPECT_EQ(joinTokens(germanNumberTokens(101000), ""),
            "einhunderteintausend");
  EXPECT_EQ(joinTokens(germanNumberTokens(17), ""), "siebzehn");
  EXPECT_EQ(joinTokens(germanNumberTokens(30), ""), "dreißig");
  EXPECT_EQ(englishNumber(21000), "twenty-one thousand");
  EXPECT_EQ(joinTokens(germanNumberTokens(21000), ""),
            "einundzwanzigtausend");
  EXPECT_EQ(englishNumber(999999),
            "nine hundred ninety-nine thousand nine hundred ninety-nine");
  EXPECT_EQ(joinTokens(tokenizeEnglishNumber("forty-two thousand")),
            "forty - two thousand");
}

TEST(Numbers, SplitsAreDisjointAndSeeded) {
  NumbersTask a = makeNumbersTask(3, 300, 50, 50, 9999);
  NumbersTask b = makeNumbersTask(3, 300, 50, 50, 9999);
  EXPECT_EQ(a.train.src, b.train.src);
  EXPECT_EQ(a.test.tgt, b.test.tgt);
  std::set<std::string> train(a.train.src.begin(), a.train.src.end());
  EXPECT_EQ(train.size(), 300u);
  for (const auto &line : a.test.src)
    EXPECT_EQ(train.count(line), 0u) << line;
  NumbersTask c = makeNumbersTask(4, 300, 50, 50, 9999);
  EXPECT_NE(a.train.src, c.train.src);
}
