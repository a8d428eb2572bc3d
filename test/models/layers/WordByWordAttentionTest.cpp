//===- WordByWordAttentionTest.cpp - Rocktaschel attention vs LibTorch ----===//
//
// The reference runs the recurrence example by example over only that
// example's valid premise and hypothesis, so it never sees padding (which
// holds junk here) and stops at the example's own last step.
//
//===----------------------------------------------------------------------===//

#include "models/common/WordByWordAttention.h"

#include "LayerCheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace models;
using namespace layercheck;

namespace {

const char *const ParamNames[] = {"Wy", "Wh", "Wr", "Wt", "Wp", "Wx", "w"};

struct WordByWordCase {
  int64_t k, L, N;
  std::vector<int32_t> premiseLengths, hypothesisLengths;
};

/// The layer, its inputs, and the results of forward and backward.
struct WordByWordRun {
  const WordByWordCase &c;
  int64_t B;
  ParamStore store;
  WordByWordAttention layer;
  std::vector<float> Y, H, G, hStar, dY, dH;
  WordByWordAttention::Cache cache;

  explicit WordByWordRun(const WordByWordCase &c)
      : c(c), B(int64_t(c.premiseLengths.size())), layer(store, "wbw", c.k) {
    Rng rng(17);
    for (Param *p : store.all())
      uniformInit(p->value, 0.6f, rng);
    Y = randomValues(c.L * B * c.k, rng);
    H = randomValues(c.N * B * c.k, rng);
    fillPadding(Y, c.premiseLengths, c.L, c.k);
    fillPadding(H, c.hypothesisLengths, c.N, c.k);
    G = randomValues(B * c.k, rng);
    hStar.resize(B * c.k);
  }

  double forward() {
    layer.forward(Y.data(), c.premiseLengths.data(), c.L, H.data(),
                  c.hypothesisLengths.data(), c.N, B, cache, hStar.data());
    return weightedSum(hStar, G);
  }

  void backward() {
    zeroGrads(store.all());
    dY.assign(Y.size(), 0.f);
    dH.assign(H.size(), 0.f);
    layer.backward(cache, G.data(), dY.data(), dH.data());
  }

  Param &param(const std::string &name) { return *store.find("wbw." + name); }
};

/// The paper's recurrence for example b, in float64 over its valid prefix.
torch::Tensor torchHStar(const WordByWordRun &run, const torch::Tensor &Y,
                         const torch::Tensor &H,
                         std::map<std::string, torch::Tensor> &p, int64_t b) {
  torch::Tensor y = Y.narrow(0, 0, run.c.premiseLengths[b]).select(1, b);
  torch::Tensor h = H.narrow(0, 0, run.c.hypothesisLengths[b]).select(1, b);
  torch::Tensor keys = torch::matmul(y, p["Wy"].t()); // [L_b, k]
  torch::Tensor r = torch::zeros({run.c.k}, torch::kFloat64);
  for (int64_t t = 0; t < h.size(0); ++t) {
    torch::Tensor M = torch::tanh(keys + torch::matmul(p["Wh"], h[t]) +
                                  torch::matmul(p["Wr"], r));
    torch::Tensor alpha = torch::softmax(torch::matmul(M, p["w"]), 0);
    r = torch::matmul(alpha, y) + torch::tanh(torch::matmul(p["Wt"], r));
  }
  return torch::tanh(torch::matmul(p["Wp"], r) +
                     torch::matmul(p["Wx"], h[h.size(0) - 1]));
}

class WordByWordAttentionTest
    : public ::testing::TestWithParam<WordByWordCase> {};

TEST_P(WordByWordAttentionTest, MatchesTorch) {
  const WordByWordCase c = GetParam();
  WordByWordRun run(c);
  run.forward();
  run.backward();
  std::map<std::string, torch::Tensor> p;
  for (const char *name : ParamNames)
    p[name] = toTorch(run.param(name).value, run.param(name).shape, true);
  torch::Tensor Y = toTorch(run.Y, {c.L, run.B, c.k}, true);
  torch::Tensor H = toTorch(run.H, {c.N, run.B, c.k}, true);
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < run.B; ++b)
    rows.push_back(torchHStar(run, Y, H, p, b));
  torch::Tensor hStar = torch::stack(rows);
  (hStar * toTorch(run.G, {run.B, c.k})).sum().backward();
  expectClose(run.hStar, hStar, "h*");
  expectClose(run.cache.hStar, hStar, "cache.hStar");
  expectClose(run.dY, Y.grad(), "dY");
  expectClose(run.dH, H.grad(), "dH");
  for (const char *name : ParamNames)
    expectClose(run.param(name).grad, p[name].grad(), std::string("d") + name);
}

TEST_P(WordByWordAttentionTest, MatchesDifferences) {
  const WordByWordCase c = GetParam();
  WordByWordRun run(c);
  run.forward();
  run.backward();
  auto loss = [&] { return run.forward(); };
  expectFiniteDifferences(loss, run.Y, run.dY, "dY", 8);
  expectFiniteDifferences(loss, run.H, run.dH, "dH", 8);
  expectParamDifferences(loss, run.store);
}

TEST_P(WordByWordAttentionTest, PaddingGetsNoGradient) {
  const WordByWordCase c = GetParam();
  WordByWordRun run(c);
  run.forward();
  run.backward();
  expectZeroPadding(run.dY, c.premiseLengths, c.L, c.k, "dY");
  expectZeroPadding(run.dH, c.hypothesisLengths, c.N, c.k, "dH");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, WordByWordAttentionTest,
    ::testing::Values(WordByWordCase{4, 5, 4, {5, 1, 3, 2}, {2, 4, 1, 3}},
                      WordByWordCase{3, 1, 1, {1, 1}, {1, 1}},
                      WordByWordCase{6, 3, 5, {3}, {5}},
                      WordByWordCase{5, 4, 3, {1, 4, 2}, {3, 1, 3}}),
    // Stable names: the default prints the case's bytes, pointers included,
    // which differ between the run that lists the tests and the one that
    // runs them.
    [](const auto &info) { return "Case" + std::to_string(info.index); });

TEST(WordByWordAttention, RegistersSevenParameters) {
  ParamStore store;
  WordByWordAttention layer(store, "nli.attention", 6);
  for (const char *name : {"Wy", "Wh", "Wr", "Wt", "Wp", "Wx"})
    EXPECT_EQ(store.find(std::string("nli.attention.") + name)->shape,
              (std::vector<int64_t>{6, 6}));
  EXPECT_EQ(store.find("nli.attention.w")->shape, (std::vector<int64_t>{6}));
  EXPECT_EQ(store.count(), 6 * 36 + 6);
}

TEST(WordByWordAttention, RejectsEmptyAndOverlongSequences) {
  ParamStore store;
  WordByWordAttention layer(store, "wbw", 2);
  std::vector<float> Y(3 * 2 * 2, 0.f), H(2 * 2 * 2, 0.f), hStar(2 * 2);
  std::vector<int32_t> fine = {1, 2}, empty = {0, 1}, overlong = {3, 1};
  WordByWordAttention::Cache cache;
  auto run = [&](const std::vector<int32_t> &premise,
                 const std::vector<int32_t> &hypothesis) {
    layer.forward(Y.data(), premise.data(), 3, H.data(), hypothesis.data(), 2,
                  2, cache, hStar.data());
  };
  EXPECT_NO_THROW(run(fine, fine));
  EXPECT_THROW(run(empty, fine), std::invalid_argument);
  EXPECT_THROW(run(fine, empty), std::invalid_argument);
  EXPECT_THROW(run(fine, overlong), std::invalid_argument);
}

} // namespace
