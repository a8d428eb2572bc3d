//===- MathAccuracyTest.cpp - The kernels' exp, sigmoid and softplus ------===//
//
// Kernels compute transcendental functions as polynomials (codegen/
// ApproximateMath.cpp). Through a chaotic recurrence an error of 20 ulp in
// exp grew to 70x what float32 itself costs (random-cell seed 4567), so
// exp is held to ~1 ulp here over its whole range, with the IEEE results
// at the ends (inf, 0, NaN) and gradual underflow.
//
//===----------------------------------------------------------------------===//

#include "jit/Jit.h"

#include "cellrt/Runtime.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace cellc;

namespace {

/// out[j] = FUNCTION(x[j]) through a JIT-compiled cell, one step.
std::vector<float> evaluate(const std::string &function,
                            const std::vector<float> &x) {
  std::string source = "cell f(x: [N]) {\n  state h: [N]\n  h' = x\n  o = " +
                       function + "(x)\n  output o\n}\n";
  jit::CompileOptions options;
  options.cacheDir = "";
  options.withBackward = false;
  auto compiled = jit::compileSource(source, "f.cell", options);
  EXPECT_TRUE(compiled.ok()) << compiled.error();
  auto cell = cellrt::Cell::load(compiled->image());
  EXPECT_TRUE(cell.ok()) << cell.error();
  int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> out(n);
  int32_t length = 1;
  cellrt::ForwardArgs args;
  args.inputs = {{x.data(), {1, 1, n}}};
  args.lengths = &length;
  args.output = {out.data(), {1, 1, n}};
  cellrt::Status status = cell->forward(args);
  EXPECT_TRUE(status.ok()) << status.message();
  return out;
}

/// Distance in units in the last place between two finite floats of the
/// same sign.
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::abs(int64_t(ia) - int64_t(ib));
}

TEST(MathAccuracy, ExpIsWithinTwoUlpsEverywhere) {
  std::vector<float> x;
  for (float v = -103.0f; v <= 88.7f; v += 0.0371f)
    x.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-8f, -1e-8f, 1.0f, -1.0f, 88.72f, -87.3f})
    x.push_back(v);
  std::vector<float> y = evaluate("exp", x);
  int64_t worst = 0;
  float worstAt = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    float expected = static_cast<float>(std::exp(double(x[i])));
    // Below the smallest normal float only absolute error means anything.
    if (expected < std::numeric_limits<float>::min()) {
      EXPECT_NEAR(y[i], expected, 2 * std::numeric_limits<float>::denorm_min())
          << "exp(" << x[i] << ")";
      continue;
    }
    int64_t error = ulps(y[i], expected);
    if (error > worst) {
      worst = error;
      worstAt = x[i];
    }
  }
  EXPECT_LE(worst, 2) << "at exp(" << worstAt << ")";
  std::printf("[ math     ] exp: %zu points, worst %lld ulp at x = %g\n",
              x.size(), static_cast<long long>(worst), worstAt);
}

TEST(MathAccuracy, ExpEndsAreInfZeroAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> y = evaluate("exp", {89.0f, 1000.0f, inf, -104.0f,
                                          -1000.0f, -inf, nan});
  EXPECT_EQ(y[0], inf);
  EXPECT_EQ(y[1], inf);
  EXPECT_EQ(y[2], inf);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[4], 0.0f);
  EXPECT_EQ(y[5], 0.0f);
  EXPECT_TRUE(std::isnan(y[6]));
}

TEST(MathAccuracy, SigmoidAndSoftplusInheritExp) {
  std::vector<float> x;
  for (float v = -30.0f; v <= 30.0f; v += 0.0173f)
    x.push_back(v);
  std::vector<float> sigmoid = evaluate("sigmoid", x);
  std::vector<float> softplus = evaluate("softplus", x);
  double worstSigmoid = 0, worstSoftplus = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    double s = 1 / (1 + std::exp(-v)), p = std::log1p(std::exp(v));
    worstSigmoid = std::max(worstSigmoid, std::fabs(sigmoid[i] - s) / s);
    worstSoftplus = std::max(worstSoftplus, std::fabs(softplus[i] - p) / p);
  }
  // A few float32 roundings each (the old exp gave 6e-7 and more).
  EXPECT_LT(worstSigmoid, 3e-7);
  EXPECT_LT(worstSoftplus, 3e-7);
  std::printf("[ math     ] sigmoid worst rel %.2e, softplus %.2e\n",
              worstSigmoid, worstSoftplus);
}

} // namespace
