//===- CheckCompareTest.cpp - cellc-check's error measures and verdicts ---===//

#include "tools/cellc-check/Compare.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace cellc::check;

namespace {

TEST(CheckCompare, IdenticalArraysPass) {
  Comparison row =
      compareArrays("out", {1, -2, 3}, {1, -2, 3}, kForwardTolerance);
  EXPECT_TRUE(row.pass);
  EXPECT_EQ(row.maxAbsError, 0);
  EXPECT_EQ(row.maxRelError, 0);
}

TEST(CheckCompare, RelativeErrorIsMaxAbsOverMaxExpected) {
  Comparison row = compareArrays("g", {1.0, 2.001, -4.0}, {1.0, 2.0, -4.0},
                                 kGradientTolerance);
  EXPECT_NEAR(row.maxAbsError, 1e-3, 1e-12);
  EXPECT_NEAR(row.maxRelError, 1e-3 / 4, 1e-12);
  EXPECT_TRUE(row.pass);
}

TEST(CheckCompare, MismatchFails) {
  // A forward output off by 1e-3 relative is a failure at 1e-4.
  Comparison row =
      compareArrays("out", {1.001, 0.5}, {1.0, 0.5}, kForwardTolerance);
  EXPECT_FALSE(row.pass);
  EXPECT_NE(formatRow(row).find("FAIL"), std::string::npos);
  EXPECT_NE(
      formatRow(compareArrays("out", {1}, {1}, kForwardTolerance)).find("PASS"),
      std::string::npos);
}

TEST(CheckCompare, NaNAndSizeMismatchFail) {
  EXPECT_FALSE(compareArrays("x", {NAN}, {1.0}, 1e-3).pass);
  Comparison sizes = compareArrays("x", {1, 2}, {1}, 1e-3);
  EXPECT_FALSE(sizes.pass);
  EXPECT_NE(sizes.note.find("sizes differ"), std::string::npos);
  EXPECT_FALSE(verdict(NAN, 1.0));
  EXPECT_TRUE(verdict(1e-5, 1e-4));
  EXPECT_FALSE(verdict(2e-4, 1e-4));
}

TEST(CheckCompare, ZeroReferenceUsesAbsoluteError) {
  EXPECT_TRUE(compareArrays("g", {0, 0}, {0, 0}, 1e-3).pass);
  EXPECT_FALSE(compareArrays("g", {0.01, 0}, {0, 0}, 1e-3).pass);
}

TEST(CheckCompare, ScaleReplacesTheDenominator) {
  // Finite differences at a few coordinates against the gradient's scale.
  Comparison row = compareArrays("fd", {1e-3 + 1e-9}, {1e-3},
                                 kFiniteDifferenceTolerance, /*scale=*/1.0);
  EXPECT_TRUE(row.pass);
  EXPECT_NEAR(row.maxRelError, 1e-9, 1e-15);
}

TEST(CheckCompare, WellConditionedKeepsTheStatedTolerance) {
  // The float32 reference is as close as rounding allows: the bar stays.
  Comparison row = compareConditioned("out", {1.001, 0.5}, {1.0, 0.5},
                                      {1.0 + 1e-7, 0.5}, kForwardTolerance);
  EXPECT_FALSE(row.pass);
  EXPECT_EQ(row.tolerance, kForwardTolerance);
  EXPECT_TRUE(row.note.empty());
}

TEST(CheckCompare, IllConditionedWidensToTheFloat32Error) {
  // A saturated tanh: float32 itself gets 10% of a tiny gradient wrong.
  std::vector<double> expected = {4e-7, -2e-7};
  Comparison row = compareConditioned("g", {3e-7, -2e-7}, expected,
                                      {3.6e-7, -2e-7}, kGradientTolerance);
  EXPECT_TRUE(row.pass) << formatRow(row);
  EXPECT_NEAR(row.tolerance, kConditioningFactor * 0.1, 1e-9);
  EXPECT_NE(formatRow(row).find("ill-conditioned"), std::string::npos);
  // Still fails when the compiled result is far worse than float32's.
  EXPECT_FALSE(compareConditioned("g", {-4e-7, -2e-7}, expected,
                                  {3.99e-7, -2e-7}, kGradientTolerance)
                   .pass);
}

TEST(CheckCompare, NaNStaysAFailureWhateverTheConditioning) {
  EXPECT_FALSE(compareConditioned("g", {NAN}, {1.0}, {1.5}, 1e-3).pass);
}

TEST(CheckCompare, AgreeingStepsKeepTheDifferenceTolerance) {
  // Steps h and 2h agree: a wrong autograd value is a failure.
  Comparison row = compareDifferences("fd", {2.0, 1.0}, {2.0 + 1e-9, 1.0},
                                      {2.001, 1.0}, kFiniteDifferenceTolerance,
                                      2.0);
  EXPECT_FALSE(row.pass);
  EXPECT_EQ(row.tolerance, kFiniteDifferenceTolerance);
  EXPECT_TRUE(row.note.empty());
}

TEST(CheckCompare, DisagreeingStepsWidenToTwiceTheirGap) {
  // Seed 2426 of the random-cell run: a chaotic recurrence, where the step
  // itself is off by 2e-5 of the gradient's size.
  Comparison row = compareDifferences("fd", {20000.5}, {20001.0}, {20000.0},
                                      kFiniteDifferenceTolerance, 20000.0);
  EXPECT_TRUE(row.pass) << formatRow(row);
  EXPECT_NEAR(row.tolerance, kStepGapFactor * 0.5 / 20000.0, 1e-12);
  EXPECT_NE(formatRow(row).find("differences uncertain"), std::string::npos);
  // A gradient wrong by far more than the steps disagree still fails.
  EXPECT_FALSE(compareDifferences("fd", {20000.5}, {20001.0}, {19000.0},
                                  kFiniteDifferenceTolerance, 20000.0)
                   .pass);
}

TEST(CheckCompare, RoundingDominatedStepsAllowTwiceTheirGap) {
  // Seed 2465: rounding error ~ eps/h puts the step-h quotient off by r and
  // the step-2h one by about r/2, so the finer error exceeds the gap.
  Comparison row = compareDifferences("fd", {1.0 + 3.03e-5}, {1.0 + 3e-6},
                                      {1.0}, kFiniteDifferenceTolerance, 1.0);
  EXPECT_TRUE(row.pass) << formatRow(row);
  EXPECT_FALSE(compareDifferences("fd", {1.0 + 6e-5}, {1.0 + 5e-5}, {1.0},
                                  kFiniteDifferenceTolerance, 1.0)
                   .pass);
}

} // namespace

TEST(CheckCompare, ZeroGradientNoiseIsMeasuredAgainstTheFloor) {
  // Seed 3830 of the random run: a gradient that is 0 in exact arithmetic,
  // 7e-18 in float64 and 1.2e-7 of float32 noise, in a run whose largest
  // gradient is ~0.3.
  std::vector<double> expected = {7e-18, -3e-18}, actual = {1.2e-7, 0};
  double floor = kGradientFloorFraction * 0.3;
  EXPECT_FALSE(compareArrays("g", actual, expected, kGradientTolerance).pass);
  Comparison row =
      compareArrays("g", actual, expected, kGradientTolerance, 0, floor);
  EXPECT_TRUE(row.pass);
  EXPECT_NEAR(row.maxRelError, 1.2e-7 / floor, 1e-12);
  EXPECT_NE(row.note.find("near zero"), std::string::npos) << row.note;
}

TEST(CheckCompare, TheFloorStillCatchesAWrongNearZeroGradient) {
  // 1e-5 where the truth is ~0, in a run of gradients ~1: well above
  // float32 noise, so it fails.
  double floor = kGradientFloorFraction * 1.0;
  Comparison row = compareArrays("g", {1e-5, 0}, {1e-18, 0},
                                 kGradientTolerance, 0, floor);
  EXPECT_FALSE(row.pass);
  // A gradient larger than the floor keeps its own denominator.
  row = compareArrays("g", {2.0 * 1.0001}, {2.0}, kGradientTolerance, 0, floor);
  EXPECT_NEAR(row.maxRelError, 1e-4, 1e-9);
  EXPECT_TRUE(row.note.empty());
}

TEST(CheckCompare, TheFloorAppliesToTheFloat32ReferenceToo) {
  // Without the floor the float32 reference's own noise (1e8 relative)
  // would widen the bar to 3e9 and anything would pass.
  std::vector<double> expected = {1e-17}, single = {1e-9}, actual = {1e-7};
  Comparison row = compareConditioned("g", actual, expected, single,
                                      kGradientTolerance, 1e-3);
  EXPECT_EQ(row.tolerance, kGradientTolerance);
  EXPECT_TRUE(row.pass);
  row = compareConditioned("g", {1e-4}, expected, single, kGradientTolerance,
                           1e-3);
  EXPECT_FALSE(row.pass);
}
