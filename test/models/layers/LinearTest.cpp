//===- LinearTest.cpp - Linear against LibTorch and differences -----------===//

#include "models/common/Linear.h"

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

TEST(ParamStore, RejectsDuplicateNames) {
  ParamStore store;
  store.add("a", {2});
  EXPECT_THROW(store.add("a", {3}), std::invalid_argument);
  EXPECT_EQ(store.find("a")->size(), 2);
  EXPECT_EQ(store.find("b"), nullptr);
}

} // namespace
