//===- LinearTest.cpp - Linear against LibTorch and differences -----------===//

#include "models/common/Linear.h"
#include "models/common/LinearSum.h"

#include "runtime/Gemm.h"

#include "LayerCheck.h"

#include <gtest/gtest.h>

using namespace models;
using namespace layercheck;

namespace {

struct LinearCase {
  int64_t rows, in, out;
  bool bias;
};

class LinearTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearTest, MatchesTorchAndDifferences) {
  const LinearCase c = GetParam();
  ParamStore store;
  Linear layer(store, "proj", c.in, c.out, c.bias);
  Rng rng(3);
  for (Param *p : store.all())
    uniformInit(p->value, 0.5f, rng);
  std::vector<float> X = randomValues(c.rows * c.in, rng);
  std::vector<float> G = randomValues(c.rows * c.out, rng);

  std::vector<float> Y(c.rows * c.out), dX(c.rows * c.in, 0.f);
  layer.forward(X.data(), c.rows, Y.data());
  zeroGrads(store.all());
  layer.backward(X.data(), c.rows, G.data(), dX.data());

  torch::Tensor x = toTorch(X, {c.rows, c.in}, true);
  torch::Tensor w = toTorch(layer.weight().value, {c.out, c.in}, true);
  torch::Tensor y = torch::matmul(x, w.t());
  torch::Tensor b;
  if (c.bias) {
    b = toTorch(layer.bias()->value, {c.out}, true);
    y = y + b;
  }
  (y * toTorch(G, {c.rows, c.out})).sum().backward();
  expectClose(Y, y, "Y");
  expectClose(dX, x.grad(), "dX");
  expectClose(layer.weight().grad, w.grad(), "dW");
  if (c.bias)
    expectClose(layer.bias()->grad, b.grad(), "db");

  auto loss = [&] {
    layer.forward(X.data(), c.rows, Y.data());
    return weightedSum(Y, G);
  };
  expectFiniteDifferences(loss, X, dX, "dX");
  std::vector<float> dW = layer.weight().grad;
  expectFiniteDifferences(loss, layer.weight().value, dW, "dW");
}

INSTANTIATE_TEST_SUITE_P(Shapes, LinearTest,
                         ::testing::Values(LinearCase{5, 3, 4, true},
                                           LinearCase{1, 7, 2, false},
                                           LinearCase{9, 16, 16, true}),
                         [](const auto &info) {
                           return "Case" + std::to_string(info.index);
                         });

TEST(Linear, AccumulatesIntoOutputAndInputGradient) {
  ParamStore store;
  Linear layer(store, "proj", 2, 2);
  layer.weight().value = {1, 2, 3, 4};
  layer.bias()->value = {10, 20};
  std::vector<float> X = {1, 1}, Y = {100, 200}, dX = {1, 1};
  layer.forward(X.data(), 1, Y.data(), /*accumulate=*/true);
  EXPECT_EQ(Y, (std::vector<float>{113, 227}));
  std::vector<float> dY = {1, 0};
  layer.backward(X.data(), 1, dY.data(), dX.data());
  EXPECT_EQ(dX, (std::vector<float>{2, 3}));
  layer.backward(X.data(), 1, dY.data(), dX.data(), /*accumulateDx=*/false);
  EXPECT_EQ(dX, (std::vector<float>{1, 2}));
}

TEST(Linear, FrozenWeightsGetNoGradient) {
  ParamStore store;
  Linear layer(store, "proj", 2, 2);
  layer.weight().frozen = true;
  std::vector<float> X = {1, 2}, dY = {1, 1};
  layer.backward(X.data(), 1, dY.data(), nullptr);
  EXPECT_EQ(layer.weight().grad, (std::vector<float>{0, 0, 0, 0}));
  EXPECT_EQ(layer.bias()->grad, (std::vector<float>{1, 1}));
  EXPECT_EQ(store.trainable().size(), 1u);
  EXPECT_EQ(store.trainableCount(), 2);
  EXPECT_EQ(store.count(), 6);
}

/// Runs body with the layers' products in bf16, then back in f32.
template <typename Body> void inBf16(Body body) {
  setProductPrecision(cellrt::Precision::BF16);
  body();
  setProductPrecision(cellrt::Precision::F32);
}

/// In bf16 a layer's weight and input gradients read the same dY: it is
/// rounded once (issue #47), and the gradients are the bits that the two
/// products give one by one.
TEST(LinearBf16, BackwardRoundsTheOutputGradientOnce) {
  if (!cellrt::detail::bf16Available().ok())
    GTEST_SKIP() << "no bf16 products on this CPU";
  const int64_t rows = 20, in = 64, out = 96;
  ParamStore store;
  Linear layer(store, "proj", in, out, /*bias=*/false);
  Rng rng(5);
  uniformInit(layer.weight().value, 0.5f, rng);
  std::vector<float> X = randomValues(rows * in, rng);
  std::vector<float> dY = randomValues(rows * out, rng);
  inBf16([&] {
    std::vector<float> dW(out * in, 0.f), dX(rows * in);
    gemm(true, false, out, in, rows, 1.f, dY.data(), out, X.data(), in, 1.f,
         dW.data(), in);
    gemm(false, false, rows, in, out, 1.f, dY.data(), out,
         layer.weight().value.data(), in, 0.f, dX.data(), in);
    std::vector<float> dXLayer(rows * in);
    zeroGrads(store.all());
    const int64_t before = cellrt::detail::bf16OperandsReused();
    layer.backward(X.data(), rows, dY.data(), dXLayer.data(),
                   /*accumulateDx=*/false);
    EXPECT_EQ(cellrt::detail::bf16OperandsReused() - before, 1);
    EXPECT_EQ(layer.weight().grad, dW);
    EXPECT_EQ(dXLayer, dX);
  });
}

/// dY already rounded by its producer (an NMT loss writes its gradient in
/// both precisions): both products read that copy, and round nothing of
/// dY, to the same bits. A wrong copy lent changes the result, so it is
/// the one read.
TEST(LinearBf16, BackwardReadsALentRoundedOutputGradient) {
  if (!cellrt::detail::bf16Available().ok())
    GTEST_SKIP() << "no bf16 products on this CPU";
  const int64_t rows = 20, in = 64, out = 96;
  ParamStore store;
  Linear layer(store, "output", in, out, /*bias=*/false);
  Rng rng(7);
  uniformInit(layer.weight().value, 0.5f, rng);
  std::vector<float> X = randomValues(rows * in, rng);
  std::vector<float> dY = randomValues(rows * out, rng);
  std::vector<uint16_t> rounded(dY.size());
  for (size_t i = 0; i < dY.size(); ++i)
    rounded[i] = cellrt::roundToBf16(dY[i]);
  inBf16([&] {
    auto backward = [&](const uint16_t *lent) {
      zeroGrads(store.all());
      std::vector<float> dX(rows * in);
      layer.backwardWithoutBias(X.data(), rows, dY.data(), dX.data(),
                                /*accumulateDx=*/false, lent);
      return std::make_pair(layer.weight().grad, dX);
    };
    auto roundedHere = backward(nullptr);
    const int64_t before = cellrt::detail::bf16OperandsReused();
    auto lent = backward(rounded.data());
    EXPECT_EQ(cellrt::detail::bf16OperandsReused() - before, 2);
    EXPECT_EQ(lent.first, roundedHere.first);
    EXPECT_EQ(lent.second, roundedHere.second);
    std::vector<uint16_t> zeros(rounded.size(), 0);
    auto fromZeros = backward(zeros.data());
    EXPECT_EQ(fromZeros.second, std::vector<float>(rows * in, 0.f));
  });
}

/// A LinearSum's inputs all read dY: rounded once for all of them.
TEST(LinearBf16, SumBackwardRoundsTheOutputGradientOnce) {
  if (!cellrt::detail::bf16Available().ok())
    GTEST_SKIP() << "no bf16 products on this CPU";
  const int64_t rows = 12, out = 32;
  ParamStore store;
  LinearSum layer(store, "readout", {{"s", 48}, {"y", 16}, {"c", 40}}, out);
  Rng rng(6);
  for (Param *p : store.all())
    uniformInit(p->value, 0.5f, rng);
  std::vector<std::vector<float>> X, dX;
  std::vector<const float *> inputs;
  std::vector<float *> gradients;
  for (size_t k = 0; k < layer.numInputs(); ++k) {
    X.push_back(randomValues(rows * layer.inputWidth(k), rng));
    dX.emplace_back(rows * layer.inputWidth(k));
  }
  for (size_t k = 0; k < layer.numInputs(); ++k) {
    inputs.push_back(X[k].data());
    gradients.push_back(dX[k].data());
  }
  std::vector<float> dY = randomValues(rows * out, rng);
  inBf16([&] {
    zeroGrads(store.all());
    const int64_t before = cellrt::detail::bf16OperandsReused();
    layer.backward(inputs, rows, dY.data(), gradients, false);
    // Six products read dY; the first rounds it.
    EXPECT_EQ(cellrt::detail::bf16OperandsReused() - before, 5);
    for (size_t k = 0; k < layer.numInputs(); ++k) {
      const int64_t in = layer.inputWidth(k);
      std::vector<float> expected(rows * in);
      gemm(false, false, rows, in, out, 1.f, dY.data(), out,
           layer.weight(k).value.data(), in, 0.f, expected.data(), in);
      EXPECT_EQ(dX[k], expected) << "input " << k;
    }
  });
}

TEST(ParamStore, RejectsDuplicateNames) {
  ParamStore store;
  store.add("a", {2});
  EXPECT_THROW(store.add("a", {3}), std::invalid_argument);
  EXPECT_EQ(store.find("a")->size(), 2);
  EXPECT_EQ(store.find("b"), nullptr);
}

} // namespace
