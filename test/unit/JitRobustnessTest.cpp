//===- JitRobustnessTest.cpp - Odd inputs through the JIT -----------------===//
//
// The JIT promises errors as values. Pathological sources once killed the
// process (a stack overflow in the checker, gigabytes of diagnostics and
// bad_alloc); now each is a short located error. And kernels on rows of
// millions of elements run: a layer norm over a row of 10^6 elements needs
// megabytes of row-local scratch, which kernels once took from the stack
// (alloca; `cellc run` died with SIGSEGV), then from malloc (aborting when
// it failed), and now get from the runtime (docs/plan-format.md).
//
//===----------------------------------------------------------------------===//

#include "jit/Jit.h"

#include "cellrt/Runtime.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace cellc;

namespace {

jit::CompileOptions noCache() {
  jit::CompileOptions options;
  options.cacheDir = "";
  return options;
}

/// A cell whose next value is `expression`.
std::string cellWith(const std::string &expression) {
  return "cell c(x: [H]) {\n  state h: [H]\n  param W: [H, H]\n  h' = " +
         expression + "\n}\n";
}

TEST(JitRobustness, PathologicalSourcesAreShortLocatedErrors) {
  std::string sum = "x";
  for (int i = 1; i < 20000; ++i)
    sum += " + x";
  struct Case {
    std::string source, error;
  } cases[] = {
      {cellWith(sum), "odd.cell:4:4052: error: cell is too long"},
      {cellWith(std::string(150, '(') + "x" + std::string(150, ')')),
       "odd.cell:4:108: error: expression is nested too deeply"},
      {cellWith("x " + std::string(1000000, '$')),
       "odd.cell:4:10: error: unexpected character '$'"},
      {"# caf\xe9\n" + cellWith("x"),
       "odd.cell:1:6: error: the file is not valid UTF-8"},
      {"", "odd.cell:1:1: error: the file defines no cell"},
  };
  for (const Case &odd : cases) {
    auto compiled = jit::compileSource(odd.source, "odd.cell", noCache());
    ASSERT_FALSE(compiled.ok());
    EXPECT_NE(compiled.error().find(odd.error), std::string::npos)
        << compiled.error().substr(0, 2000);
    // At most 20 errors, each with at most 80 bytes of its source line.
    EXPECT_LT(compiled.error().size(), 10000u);
  }
}

const char *const kWideCell = R"(
cell wide(x: [H]) {
  state h: [H]
  param g: [H], b: [H]
  h' = tanh(layernorm(x + h, g, b))
}
)";

/// The row's layer norm n = (v - mean) r, r = 1/sqrt(variance + eps), in
/// double precision.
std::vector<double> normalized(const std::vector<double> &v, double &r) {
  double mean = 0, variance = 0;
  for (double e : v)
    mean += e;
  mean /= v.size();
  for (double e : v)
    variance += (e - mean) * (e - mean);
  r = 1 / std::sqrt(variance / v.size() + 1e-5);
  std::vector<double> n(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    n[i] = (v[i] - mean) * r;
  return n;
}

/// tanh(layernorm(v) * g + b) in double precision.
std::vector<double> reference(const std::vector<double> &v,
                              const std::vector<float> &g,
                              const std::vector<float> &b) {
  double r;
  std::vector<double> n = normalized(v, r);
  for (size_t i = 0; i < v.size(); ++i)
    n[i] = std::tanh(n[i] * g[i] + b[i]);
  return n;
}

/// The kernels sum rows in blocks of 32 elements and then the tail one by
/// one: rows shorter than a block, around one and around several must each
/// sum every element once, forward and in the gradient's two extra sums.
TEST(JitRobustness, LayerNormRowsOfLengthsAroundTheSumBlocks) {
  auto compiled = jit::compileSource(kWideCell, "wide.cell", noCache());
  ASSERT_TRUE(compiled.ok()) << compiled.error();
  auto cell = cellrt::Cell::load(compiled->image());
  ASSERT_TRUE(cell.ok()) << cell.error();
  const int64_t T = 1, B = 3;
  for (int64_t H : {1, 2, 7, 8, 31, 32, 33, 63, 65, 100, 1536}) {
    SCOPED_TRACE("H = " + std::to_string(H));
    std::vector<float> x(B * H), g(H), b(H), out(B * H), dout(B * H);
    for (int64_t i = 0; i < B * H; ++i) {
      x[i] = std::sin(0.37f * i) + 0.5f;
      dout[i] = std::cos(0.11f * i);
    }
    for (int64_t i = 0; i < H; ++i) {
      g[i] = 1.0f + static_cast<float>(i % 5) / 10.0f;
      b[i] = static_cast<float>(i % 3) / 10.0f;
    }
    std::vector<int32_t> lengths(B, T);
    cellrt::ForwardArgs args;
    args.inputs = {{x.data(), {T, B, H}}};
    args.lengths = lengths.data();
    args.params = {{"g", {g.data(), {H}}}, {"b", {b.data(), {H}}}};
    args.output = {out.data(), {T, B, H}};
    // Inference and training run the whole-sequence scan kernel (training
    // binds its next state to the history); the backward kernel sums the
    // rows itself.
    std::vector<float> inferred(B * H);
    args.output.data = inferred.data();
    cellrt::Status status = cell->forward(args);
    ASSERT_TRUE(status.ok()) << status.message();
    args.output.data = out.data();
    cellrt::Tape tape;
    status = cell->forward(args, tape);
    ASSERT_TRUE(status.ok()) << status.message();
    std::vector<float> dx(B * H), dg(H), db(H);
    cellrt::BackwardArgs gradients;
    gradients.outputGradient = {dout.data(), {T, B, H}};
    gradients.inputGradients = {{dx.data(), {T, B, H}}};
    gradients.paramGradients = {{"g", {dg.data(), {H}}},
                                {"b", {db.data(), {H}}}};
    status = cell->backward(args, gradients, tape);
    ASSERT_TRUE(status.ok()) << status.message();

    // From the zero state v = x; with a = n g + b and y = tanh(a):
    // da = dout (1 - y^2), dn = da g, dv = r (dn - mean(dn) - n mean(dn n)).
    std::vector<double> dgWant(H, 0), dbWant(H, 0);
    for (int64_t row = 0; row < B; ++row) {
      double r;
      std::vector<double> n =
          normalized({x.begin() + row * H, x.begin() + (row + 1) * H}, r);
      std::vector<double> dn(H);
      double meanDn = 0, meanDnN = 0;
      for (int64_t i = 0; i < H; ++i) {
        double y = std::tanh(n[i] * g[i] + b[i]);
        EXPECT_NEAR(out[row * H + i], y, 2e-6) << "y at " << row << "," << i;
        EXPECT_NEAR(inferred[row * H + i], y, 2e-6)
            << "inferred y at " << row << "," << i;
        double da = dout[row * H + i] * (1 - y * y);
        dn[i] = da * g[i];
        meanDn += dn[i] / H;
        meanDnN += dn[i] * n[i] / H;
        dgWant[i] += da * n[i];
        dbWant[i] += da;
      }
      for (int64_t i = 0; i < H; ++i)
        EXPECT_NEAR(dx[row * H + i], r * (dn[i] - meanDn - n[i] * meanDnN),
                    1e-4 * std::max(1.0, r))
            << "dx at " << row << "," << i;
    }
    for (int64_t i = 0; i < H; ++i) {
      EXPECT_NEAR(dg[i], dgWant[i], 1e-5) << "dg at " << i;
      EXPECT_NEAR(db[i], dbWant[i], 1e-5) << "db at " << i;
    }
  }
}

TEST(JitRobustness, LayerNormOverRowsOfTwoMillionElements) {
  const int64_t T = 2, B = 1, H = 2100000;
  auto compiled = jit::compileSource(kWideCell, "wide.cell", noCache());
  ASSERT_TRUE(compiled.ok()) << compiled.error();
  auto cell = cellrt::Cell::load(compiled->image());
  ASSERT_TRUE(cell.ok()) << cell.error();

  std::vector<float> x(T * B * H), g(H), b(H), out(T * B * H), final(B * H);
  for (int64_t i = 0; i < T * B * H; ++i)
    x[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
  for (int64_t i = 0; i < H; ++i) {
    g[i] = 1.0f + static_cast<float>(i % 5) / 10.0f;
    b[i] = static_cast<float>(i % 3) / 10.0f;
  }
  std::vector<int32_t> lengths = {T};
  cellrt::ForwardArgs args;
  args.inputs = {{x.data(), {T, B, H}}};
  args.lengths = lengths.data();
  args.params = {{"g", {g.data(), {H}}}, {"b", {b.data(), {H}}}};
  args.output = {out.data(), {T, B, H}};
  args.finalStates = {{final.data(), {B, H}}};
  cellrt::Tape tape;
  cellrt::Status status = cell->forward(args, tape);
  ASSERT_TRUE(status.ok()) << status.message();

  // Both steps against the float64 reference, from the zero initial state.
  std::vector<double> state(H, 0.0);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<double> sum(H);
    for (int64_t i = 0; i < H; ++i)
      sum[i] = x[t * H + i] + state[i];
    state = reference(sum, g, b);
    double worst = 0;
    for (int64_t i = 0; i < H; ++i)
      worst = std::max(worst, std::abs(out[t * H + i] - state[i]));
    // float32 sums over 2.1 million elements: a few 1e-4 of rounding.
    EXPECT_LT(worst, 1e-3) << "step " << t;
  }

  // Backward needs the layer norm's scratch (and its gradient's) too.
  std::vector<float> dout(T * B * H, 1.0f), dg(H), db(H), dx(T * B * H);
  cellrt::BackwardArgs gradients;
  gradients.outputGradient = {dout.data(), {T, B, H}};
  gradients.inputGradients = {{dx.data(), {T, B, H}}};
  gradients.paramGradients = {{"g", {dg.data(), {H}}}, {"b", {db.data(), {H}}}};
  status = cell->backward(args, gradients, tape);
  ASSERT_TRUE(status.ok()) << status.message();
  for (float value : {dx.front(), dx.back(), dg[H / 2], db[H - 1]})
    EXPECT_TRUE(std::isfinite(value));
}

} // namespace
