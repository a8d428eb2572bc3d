//===- BleuTest.cpp - BLEU and the 13a tokeniser against hand computation -===//

#include "models/common/Bleu.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace models;

TEST(Tokenize13a, Punctuation) {
  EXPECT_EQ(tokenize13a("Hello, world!"), "Hello , world !");
  // '$' is split off; a period or comma between digits stays.
  EXPECT_EQ(tokenize13a("It costs $5.50, ok."), "It costs $ 5.50 , ok .");
  // A dash after a digit is split off; an apostrophe is not in the classes.
  EXPECT_EQ(tokenize13a("1990-2000 don't"), "1990 - 2000 don't");
  EXPECT_EQ(tokenize13a("&quot;quoted&quot; &amp; more"),
            "\" quoted \" & more");
  EXPECT_EQ(tokenize13a("Größe: 5,5 m."), "Größe : 5,5 m .");
  EXPECT_EQ(tokenize13a("  a   b\t"), "a b");
  EXPECT_EQ(tokenize13a("x<skipped>y"), "xy");
  EXPECT_EQ(tokenize13a("a-b (c) [d] {e}"), "a-b ( c ) [ d ] { e }");
}

TEST(Bleu, IdenticalIsHundred) {
  auto score = corpusSacreBleu({"the cat sat on the mat ."},
                               {"the cat sat on the mat ."});
  EXPECT_NEAR(score.bleu, 100.0, 1e-9);
  EXPECT_NEAR(corpusMultiBleu({"a b c d"}, {"a b c d"}).bleu, 100.0, 1e-9);
}

// hyp "the cat the cat on the mat" vs ref "the cat is on the mat":
// matches 5/7, 3/6, 1/5, 0/4; BP = 1 (7 > 6).
TEST(Bleu, SacreBleuExpSmoothing) {
  auto score = corpusSacreBleu({"the cat the cat on the mat"},
                               {"the cat is on the mat"});
  EXPECT_NEAR(score.precisions[0], 500.0 / 7, 1e-9);
  EXPECT_NEAR(score.precisions[1], 50.0, 1e-9);
  EXPECT_NEAR(score.precisions[2], 20.0, 1e-9);
  // No 4-gram matches: 'exp' smoothing gives 100 / (2 * 4).
  EXPECT_NEAR(score.precisions[3], 12.5, 1e-9);
  EXPECT_NEAR(score.brevityPenalty, 1.0, 1e-12);
  // (500/7 * 50 * 20 * 12.5) ^ (1/4)
  EXPECT_NEAR(score.bleu, 30.739407647563215, 1e-9);
}

TEST(Bleu, MultiBleuZeroPrecisionIsZero) {
  auto score = corpusMultiBleu({"the cat the cat on the mat"},
                               {"the cat is on the mat"});
  EXPECT_NEAR(score.bleu, 0.0, 1e-9);
}

// Two sentences, all n-grams match, hyp 9 words vs ref 11:
// BP = exp(1 - 11/9).
TEST(Bleu, CorpusBrevityPenalty) {
  std::vector<std::string> hyps = {"a b c d e", "x y z w"};
  std::vector<std::string> refs = {"a b c d e f g", "x y z w"};
  auto multi = corpusMultiBleu(hyps, refs);
  EXPECT_NEAR(multi.bleu, 80.07374029168079, 1e-9);
  EXPECT_EQ(multi.hypLength, 9);
  EXPECT_EQ(multi.refLength, 11);
  EXPECT_NEAR(corpusSacreBleu(hyps, refs).bleu, 80.07374029168079, 1e-9);
}

// Corpus statistics are summed before the precisions are taken.
TEST(Bleu, CorpusLevelNotAveraged) {
  // Sentence 1: 4/4 3/3 2/2 1/1; sentence 2: "p q" vs "p r": 1/2 0/1.
  // Corpus: 5/6, 3/4, 2/2, 1/1; hyp 6 = ref 6.
  auto score = corpusMultiBleu({"a b c d", "p q"}, {"a b c d", "p r"});
  double expected = 100 * std::pow(5.0 / 6 * 3.0 / 4 * 1 * 1, 0.25);
  EXPECT_NEAR(score.bleu, expected, 1e-9);
}

TEST(Bleu, LowercaseOption) {
  EXPECT_NEAR(corpusSacreBleu({"The Cat sat down"}, {"the cat sat down"}, true)
                  .bleu,
              100.0, 1e-9);
  EXPECT_LT(corpusSacreBleu({"The Cat sat down"}, {"the cat sat down"}).bleu,
            100.0);
}

// The signature says what was computed: 13a comes with 'exp' smoothing,
// --tokenize none (multi-bleu) scores the text's own tokens unsmoothed.
TEST(Bleu, Signature) {
  EXPECT_EQ(bleuSignature(true, false, "1.2.3"),
            "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:cellc-1.2.3");
  EXPECT_EQ(bleuSignature(false, true, "1.2.3"),
            "nrefs:1|case:lc|eff:no|tok:none|smooth:none|version:cellc-1.2.3");
}
