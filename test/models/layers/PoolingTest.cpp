//===- PoolingTest.cpp - Mean over time against LibTorch ------------------===//

#include "models/common/Pooling.h"

#include "LayerCheck.h"

#include <gtest/gtest.h>

using namespace models;
using namespace layercheck;

namespace {

TEST(MeanOverTime, MatchesTorchAndDifferencesAndIgnoresPadding) {
  const int64_t T = 4, B = 3, W = 5;
  std::vector<int32_t> lengths = {4, 1, 3};
  Rng rng(9);
  std::vector<float> X = randomValues(T * B * W, rng);
  fillPadding(X, lengths, T, W);
  std::vector<float> G = randomValues(B * W, rng), mean(B * W);
  meanOverTime(X.data(), lengths.data(), B, W, mean.data());
  std::vector<float> dX(X.size(), 0.f);
  meanOverTimeBackward(G.data(), lengths.data(), B, W, dX.data());

  torch::Tensor x = toTorch(X, {T, B, W}, true);
  std::vector<torch::Tensor> rows;
  for (int64_t b = 0; b < B; ++b)
    rows.push_back(x.narrow(0, 0, lengths[b]).select(1, b).mean(0));
  torch::Tensor reference = torch::stack(rows);
  (reference * toTorch(G, {B, W})).sum().backward();
  expectClose(mean, reference, "mean");
  expectClose(dX, x.grad(), "dX");
  expectZeroPadding(dX, lengths, T, W, "dX");

  auto loss = [&] {
    meanOverTime(X.data(), lengths.data(), B, W, mean.data());
    return weightedSum(mean, G);
  };
  expectFiniteDifferences(loss, X, dX, "dX", 8);
}

TEST(MeanOverTime, BackwardAccumulates) {
  std::vector<int32_t> lengths = {2};
  std::vector<float> dMean = {4}, dX = {1, 1};
  meanOverTimeBackward(dMean.data(), lengths.data(), 1, 1, dX.data());
  EXPECT_EQ(dX, (std::vector<float>{3, 3}));
}

} // namespace
