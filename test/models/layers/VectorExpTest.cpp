//===- test/models/layers/VectorExpTest.cpp - The layers' inline exp ------===//
//
// models::vectorExp replaces libmvec's expf in the loss, attention and tanh
// loops (issue #47): it must be as accurate over the whole float range, and
// keep exp's ends.
//
//===----------------------------------------------------------------------===//

#include "models/common/VectorExp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace {

int32_t bitsOf(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

/// Every 97th float from -104 to 88.7 (about 20 million points of every
/// binade in between, both signs), against exp in double rounded once.
TEST(VectorExp, WithinOneUlpOverTheWholeRange) {
  int64_t worst = 0, points = 0;
  float worstAt = 0;
  auto check = [&](float x) {
    ++points;
    const float expected = float(std::exp(double(x)));
    const float got = models::vectorExp(x);
    // Below the smallest normal float only absolute error means anything.
    if (expected < std::numeric_limits<float>::min()) {
      ASSERT_NEAR(got, expected, 2 * std::numeric_limits<float>::denorm_min())
          << "exp(" << x << ")";
      return;
    }
    const int64_t error = std::abs(int64_t(bitsOf(got)) - bitsOf(expected));
    if (error > worst) {
      worst = error;
      worstAt = x;
    }
  };
  for (int32_t bits = bitsOf(-0.f); bits <= bitsOf(-104.f); bits += 97) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    check(x);
  }
  for (int32_t bits = 0; bits <= bitsOf(88.7f); bits += 97) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    check(x);
  }
  for (float x : {0.f, -0.f, 1.f, -1.f, 88.72f, -87.3f, 0.5f * 0.693359375f})
    check(x);
  EXPECT_LE(worst, 1) << "at exp(" << worstAt << ")";
  std::printf("[ vectorExp ] %lld points, worst %lld ulp at x = %g\n",
              (long long)points, (long long)worst, worstAt);
}

TEST(VectorExp, EndsAreInfZeroAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(models::vectorExp(89.f), inf);
  EXPECT_EQ(models::vectorExp(1e30f), inf);
  EXPECT_EQ(models::vectorExp(inf), inf);
  EXPECT_EQ(models::vectorExp(-105.f), 0.f);
  EXPECT_EQ(models::vectorExp(-1e30f), 0.f);
  EXPECT_EQ(models::vectorExp(-inf), 0.f);
  EXPECT_TRUE(
      std::isnan(models::vectorExp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(models::vectorExp(0.f), 1.f);
}

/// The loops that use it run it 16 lanes wide; a lane must give what a
/// scalar call gives.
TEST(VectorExp, LoopGivesTheScalarValues) {
  constexpr int kN = 1000;
  float x[kN], y[kN];
  for (int i = 0; i < kN; ++i)
    x[i] = -100.f + 0.1887f * float(i);
  for (int i = 0; i < kN; ++i)
    y[i] = models::vectorExp(x[i]);
  for (int i = 0; i < kN; ++i) {
    volatile float scalar = x[i];
    ASSERT_EQ(bitsOf(y[i]), bitsOf(models::vectorExp(scalar))) << x[i];
  }
}

} // namespace
