//===- LayerNormTest.cpp - LayerNorm against LibTorch and differences -----===//

#include "models/common/LayerNorm.h"

#include "LayerCheck.h"

#include <gtest/gtest.h>

using namespace models;
using namespace layercheck;

namespace {

TEST(LayerNorm, MatchesTorchAndDifferences) {
  const int64_t rows = 4, width = 6;
  ParamStore store;
  LayerNorm layer(store, "norm", width);
  Rng rng(9);
  uniformInit(layer.gain().value, 1.f, rng);
  uniformInit(layer.bias().value, 1.f, rng);
  std::vector<float> X = randomValues(rows * width, rng, 2.f);
  X[5] = 40.f; // a row with an outlier
  std::vector<float> G = randomValues(rows * width, rng);
  std::vector<float> Y(rows * width), dX(rows * width, 0.f);
  LayerNorm::Stats stats;
  layer.forward(X.data(), rows, Y.data(), stats);
  layer.backward(X.data(), rows, stats, G.data(), dX.data());

  torch::Tensor x = toTorch(X, {rows, width}, true);
  torch::Tensor g = toTorch(layer.gain().value, {width}, true);
  torch::Tensor b = toTorch(layer.bias().value, {width}, true);
  torch::Tensor y = torch::layer_norm(x, {width}, g, b, 1e-5);
  (y * toTorch(G, {rows, width})).sum().backward();
  expectClose(Y, y, "Y");
  expectClose(dX, x.grad(), "dX");
  expectClose(layer.gain().grad, g.grad(), "dGain");
  expectClose(layer.bias().grad, b.grad(), "dBias");

  auto loss = [&] {
    layer.forward(X.data(), rows, Y.data(), stats);
    return weightedSum(Y, G);
  };
  expectFiniteDifferences(loss, X, dX, "dX", 8, 1e-2f);
  std::vector<float> dGain = layer.gain().grad;
  expectFiniteDifferences(loss, layer.gain().value, dGain, "dGain");
}

TEST(LayerNorm, ConstantRowsStayFinite) {
  ParamStore store;
  LayerNorm layer(store, "norm", 3);
  std::vector<float> X = {1e6f, 1e6f, 1e6f}, Y(3), dX(3, 0.f), dY = {1, 2, 3};
  LayerNorm::Stats stats;
  layer.forward(X.data(), 1, Y.data(), stats);
  layer.backward(X.data(), 1, stats, dY.data(), dX.data());
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(Y[j], 0.f);
    EXPECT_TRUE(std::isfinite(dX[j]));
  }
}

} // namespace
