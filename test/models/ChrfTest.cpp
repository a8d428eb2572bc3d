//===- ChrfTest.cpp - chrF2 against hand computation ----------------------===//
//
// Expected values follow sacreBLEU's chrF definition (orders 1..6,
// whitespace removed, counts summed over the corpus, precision and recall
// averaged over the orders both sides have, F-beta with beta = 2), worked
// by hand below and checked with this independent Python (not sacreBLEU):
//
//   def grams(s, n):
//       s = ''.join(s.split())
//       return Counter(s[i:i+n] for i in range(len(s)-n+1))
//   def chrf(hyps, refs):
//       H, R, M = [0]*6, [0]*6, [0]*6
//       for h, r in zip(hyps, refs):
//           for n in range(1, 7):
//               a, b = grams(h, n), grams(r, n)
//               H[n-1] += sum(a.values()); R[n-1] += sum(b.values())
//               M[n-1] += sum(min(c, b[g]) for g, c in a.items())
//       k = [i for i in range(6) if H[i] and R[i]]
//       p = sum(M[i]/H[i] for i in k)/len(k); r = sum(M[i]/R[i] for i in
//       k)/len(k) return 100*5*p*r/(4*p+r)
//
//===----------------------------------------------------------------------===//

#include "models/common/Chrf.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace models;

// "ab" against "abc": 1-grams 2/2 matched of 3, 2-grams 1/1 of 2; order 3
// has reference n-grams only and does not count. P = (1 + 1)/2 = 1,
// R = (2/3 + 1/2)/2 = 7/12, F2 = 5PR/(4P + R) = (35/12)/(55/12) = 7/11.
TEST(Chrf, HandComputedOrders) {
  ChrfScore score = corpusChrf({"ab"}, {"abc"});
  EXPECT_EQ(score.effectiveOrder, 2);
  EXPECT_NEAR(score.precision, 1.0, 1e-12);
  EXPECT_NEAR(score.recall, 7.0 / 12, 1e-12);
  EXPECT_NEAR(score.chrf, 700.0 / 11, 1e-9);
  EXPECT_EQ(score.str(), "chrF2 = 63.64");
}

// Repeated characters are clipped by the reference's count: "aaa" against
// "aa": 1-grams 2 of 3, 2-grams 1 of 2. P = (2/3 + 1/2)/2 = 7/12, R = 1,
// F2 = (35/12)/(28/12 + 1) = 35/40.
TEST(Chrf, CountsAreClipped) {
  EXPECT_NEAR(corpusChrf({"aaa"}, {"aa"}).chrf, 87.5, 1e-9);
}

// Whitespace is removed before the n-grams are taken: "the cat sat" and
// "thecatsat" are the same 9 characters.
TEST(Chrf, WhitespaceIsRemoved) {
  EXPECT_NEAR(corpusChrf({"the cat sat"}, {"thecatsat"}).chrf, 100.0, 1e-9);
  EXPECT_NEAR(corpusChrf({" the\tcat  sat "}, {"the cat sat"}).chrf, 100.0,
              1e-9);
}

// Statistics are summed over the corpus before precision and recall:
// "acat"/"thecat" and "dog"/"dogs" give per order (hyp, ref, match)
// (7, 10, 6), (5, 8, 4), (3, 6, 2), (1, 4, 0); orders 5 and 6 have no
// hypothesis n-grams. P = (6/7 + 4/5 + 2/3 + 0)/4, R = (6/10 + 4/8 + 2/6 +
// 0)/4, chrF2 = 38.80751590471963 (the mean of the two sentences' own
// scores would be another number).
TEST(Chrf, CorpusStatisticsAreSummed) {
  ChrfScore score = corpusChrf({"a cat", "dog"}, {"the cat", "dogs"});
  EXPECT_EQ(score.effectiveOrder, 4);
  double p = (6.0 / 7 + 4.0 / 5 + 2.0 / 3) / 4;
  double r = (6.0 / 10 + 4.0 / 8 + 2.0 / 6) / 4;
  EXPECT_NEAR(score.chrf, 100 * 5 * p * r / (4 * p + r), 1e-9);
  EXPECT_NEAR(score.chrf, 38.80751590471963, 1e-9);
  double alone = (corpusChrf({"a cat"}, {"the cat"}).chrf +
                  corpusChrf({"dog"}, {"dogs"}).chrf) /
                 2;
  EXPECT_GT(std::abs(alone - score.chrf), 1.0);
}

// Characters are code points: "Größe" is 5 of them. Against "größe" only
// the first differs: orders 1..5 match 4/5, 3/4, 2/3, 1/2, 0/1, so
// P = R = (4/5 + 3/4 + 2/3 + 1/2 + 0)/5 = 0.5433.... --lc lower-cases
// ASCII letters.
TEST(Chrf, CodePointsAndCase) {
  double pr = (4.0 / 5 + 3.0 / 4 + 2.0 / 3 + 1.0 / 2) / 5;
  EXPECT_NEAR(corpusChrf({"Größe"}, {"größe"}).chrf, 100 * pr, 1e-9);
  EXPECT_NEAR(corpusChrf({"Größe"}, {"größe"}, true).chrf, 100.0, 1e-9);
}

TEST(Chrf, EmptyAndMismatched) {
  EXPECT_EQ(corpusChrf({""}, {"abc"}).chrf, 0.0);
  EXPECT_EQ(corpusChrf({"xyz"}, {"abc"}).chrf, 0.0);
  EXPECT_THROW(corpusChrf({"a"}, {"a", "b"}), std::exception);
}

TEST(Chrf, Signature) {
  EXPECT_EQ(
      chrfSignature(false, "1.2.3"),
      "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:cellc-1.2.3");
  EXPECT_EQ(chrfSignature(true, "1.2.3"),
            "nrefs:1|case:lc|eff:yes|nc:6|nw:0|space:no|version:cellc-1.2.3");
}
