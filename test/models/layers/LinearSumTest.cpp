//===- LinearSumTest.cpp - A linear layer over several inputs -------------===//
//
// Checked as the NMT readout uses it: t = tanh(Ws s + Wy y + Wc c + b), so
// tanhBackward (Math.h) is checked with it.
//
//===----------------------------------------------------------------------===//

#include "models/common/LinearSum.h"
#include "models/common/Math.h"

#include "LayerCheck.h"

#include <gtest/gtest.h>

using namespace models;
using namespace layercheck;

namespace {

struct LinearSumCase {
  int64_t rows, out;
  std::vector<int64_t> widths;
};

class LinearSumTest : public ::testing::TestWithParam<LinearSumCase> {};

TEST_P(LinearSumTest, TanhOfTheSumMatchesTorchAndDifferences) {
  const LinearSumCase c = GetParam();
  const size_t n = c.widths.size();
  ParamStore store;
  std::vector<LinearSum::Input> inputs;
  for (size_t k = 0; k < n; ++k)
    inputs.push_back({"W" + std::to_string(k), c.widths[k]});
  LinearSum layer(store, "sum", inputs, c.out);
  Rng rng(5);
  for (Param *p : store.all())
    uniformInit(p->value, 0.5f, rng);
  std::vector<std::vector<float>> X(n), dX(n);
  for (size_t k = 0; k < n; ++k) {
    X[k] = randomValues(c.rows * c.widths[k], rng);
    dX[k].assign(X[k].size(), 0.f);
  }
  std::vector<float> G = randomValues(c.rows * c.out, rng);
  std::vector<float> Y(c.rows * c.out);
  auto forward = [&] {
    std::vector<const float *> x;
    for (const std::vector<float> &input : X)
      x.push_back(input.data());
    layer.forward(x, c.rows, Y.data());
    tanhInPlace(Y.data(), c.rows * c.out);
    return x;
  };
  std::vector<const float *> x = forward();
  std::vector<float> dY = G;
  tanhBackward(Y.data(), dY.data(), c.rows * c.out);
  zeroGrads(store.all());
  std::vector<float *> dx;
  for (std::vector<float> &d : dX)
    dx.push_back(d.data());
  layer.backward(x, c.rows, dY.data(), dx);

  std::vector<torch::Tensor> tx, tw;
  torch::Tensor sum = toTorch(layer.bias().value, {c.out}, true), b = sum;
  for (size_t k = 0; k < n; ++k) {
    tx.push_back(toTorch(X[k], {c.rows, c.widths[k]}, true));
    tw.push_back(toTorch(layer.weight(k).value, {c.out, c.widths[k]}, true));
    sum = sum + torch::matmul(tx[k], tw[k].t());
  }
  torch::Tensor y = torch::tanh(sum);
  (y * toTorch(G, {c.rows, c.out})).sum().backward();
  expectClose(Y, y, "Y");
  expectClose(layer.bias().grad, b.grad(), "db");
  for (size_t k = 0; k < n; ++k) {
    expectClose(dX[k], tx[k].grad(), "dX" + std::to_string(k));
    expectClose(layer.weight(k).grad, tw[k].grad(), "dW" + std::to_string(k));
  }

  auto loss = [&] {
    forward();
    return weightedSum(Y, G);
  };
  for (size_t k = 0; k < n; ++k)
    expectFiniteDifferences(loss, X[k], dX[k], "dX" + std::to_string(k));
  expectParamDifferences(loss, store);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LinearSumTest,
    ::testing::Values(LinearSumCase{4, 3, {5, 2, 6}}, LinearSumCase{1, 2, {3}},
                      LinearSumCase{7, 8, {8, 4}}),
    [](const auto &info) { return "Case" + std::to_string(info.index); });

TEST(LinearSum, RegistersEachWeightThenTheBias) {
  ParamStore store;
  LinearSum layer(store, "readout", {{"Ws", 4}, {"Wy", 3}, {"Wc", 6}}, 5);
  std::vector<std::string> names;
  for (Param *p : store.all())
    names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"readout.Ws", "readout.Wy",
                                             "readout.Wc", "readout.b"}));
  EXPECT_EQ(layer.weight(2).shape, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(store.count(), 5 * (4 + 3 + 6) + 5);
}

TEST(LinearSum, OverwritesOrAccumulatesTheInputGradients) {
  ParamStore store;
  LinearSum layer(store, "sum", {{"A", 1}, {"B", 1}}, 1);
  layer.weight(0).value = {2};
  layer.weight(1).value = {3};
  layer.bias().value = {1};
  std::vector<float> a = {1}, b = {10}, y = {100}, dy = {1};
  layer.forward({a.data(), b.data()}, 1, y.data());
  EXPECT_EQ(y, (std::vector<float>{33}));
  std::vector<float> da = {5}, db = {5};
  layer.backward({a.data(), b.data()}, 1, dy.data(), {da.data(), db.data()});
  EXPECT_EQ(da, (std::vector<float>{7}));
  layer.backward({a.data(), b.data()}, 1, dy.data(), {da.data(), nullptr},
                 /*accumulateDx=*/false);
  EXPECT_EQ(da, (std::vector<float>{2}));
  EXPECT_EQ(db, (std::vector<float>{8}));
  EXPECT_EQ(layer.bias().grad, (std::vector<float>{2}));
}

} // namespace
