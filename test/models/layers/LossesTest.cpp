//===- LossesTest.cpp - Cross-entropy and dropout -------------------------===//

#include "models/common/Losses.h"
#include "models/common/Dropout.h"

#include "LayerCheck.h"

#include "cellrt/Precision.h"
#include "cellrt/Runtime.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace models;
using namespace layercheck;

namespace {

TEST(SoftmaxCrossEntropy, MatchesTorchAndDifferences) {
  const int64_t rows = 5, classes = 3;
  Rng rng(21);
  std::vector<float> logits = randomValues(rows * classes, rng, 4.f);
  std::vector<int32_t> targets = {0, 2, 1, 1, 2};
  std::vector<uint8_t> mask = {1, 1, 0, 1, 1};
  std::vector<float> dLogits(rows * classes), logProbs;
  const float scale = 0.25f;
  double loss =
      softmaxCrossEntropy(logits.data(), rows, classes, targets.data(),
                          mask.data(), scale, dLogits.data(), logProbs);

  torch::Tensor x = toTorch(logits, {rows, classes}, true);
  torch::Tensor t = torch::tensor({0, 2, 1, 1, 2}, torch::kLong);
  torch::Tensor m = torch::tensor({1., 1., 0., 1., 1.}, torch::kFloat64);
  torch::Tensor perRow =
      torch::nll_loss(torch::log_softmax(x, 1), t, {}, at::Reduction::None);
  torch::Tensor reference = (perRow * m).sum();
  (reference * scale).backward();
  EXPECT_NEAR(loss, reference.item<double>(), 1e-5);
  expectClose(dLogits, x.grad(), "dLogits");
  expectClose(logProbs, torch::log_softmax(x, 1), "logProbs");

  auto lossOnly = [&] {
    std::vector<float> unused;
    return scale * softmaxCrossEntropy(logits.data(), rows, classes,
                                       targets.data(), mask.data(), 1.f,
                                       nullptr, unused);
  };
  expectFiniteDifferences(lossOnly, logits, dLogits, "dLogits", 8, 1e-2f);

  std::vector<int32_t> bad = {3, 0, 0, 0, 0};
  EXPECT_THROW(softmaxCrossEntropy(logits.data(), rows, classes, bad.data(),
                                   nullptr, 1.f, nullptr, logProbs),
               std::out_of_range);
}

TEST(SoftmaxCrossEntropy, InPlaceLeavesTheSameLogProbabilities) {
  const int64_t rows = 4, classes = 6;
  Rng rng(22);
  std::vector<float> logits = randomValues(rows * classes, rng, 3.f);
  std::vector<int32_t> targets = {5, 0, 2, 3};
  std::vector<float> dCopy(rows * classes), dInPlace(rows * classes), logProbs;
  double copied =
      softmaxCrossEntropy(logits.data(), rows, classes, targets.data(), nullptr,
                          0.5f, dCopy.data(), logProbs);
  std::vector<float> inPlace = logits;
  double loss =
      softmaxCrossEntropyInPlace(inPlace.data(), rows, classes, targets.data(),
                                 nullptr, 0.5f, dInPlace.data());
  EXPECT_EQ(loss, copied);
  EXPECT_EQ(inPlace, logProbs);
  EXPECT_EQ(dInPlace, dCopy);
  std::vector<float> decoded = logits;
  logSoftmax(decoded.data(), rows, classes);
  EXPECT_EQ(decoded, logProbs);
  expectClose(decoded, torch::log_softmax(toTorch(logits, {rows, classes}), 1),
              "logSoftmax");
}

// Label smoothing by hand: logits log(0.5, 0.25, 0.25) are their own
// log-probabilities; target 0, eps = 0.1: loss = 0.9 ln 2 + 0.1 * (ln 2 +
// ln 4 + ln 4) / 3 = (0.9 + 1/6) ln 2, and dLogits = p - q with q = (0.9 +
// 0.1/3, 0.1/3, 0.1/3).
TEST(SmoothedCrossEntropy, HandComputed) {
  std::vector<float> logits = {std::log(0.5f), std::log(0.25f),
                               std::log(0.25f)};
  std::vector<int32_t> target = {0};
  std::vector<float> d(3);
  double loss = smoothedCrossEntropyInPlace(logits.data(), 1, 3, target.data(),
                                            nullptr, 0.1f, 1.f, d.data());
  EXPECT_NEAR(loss, (0.9 + 1.0 / 6) * std::log(2.0), 1e-6);
  EXPECT_NEAR(d[0], 0.5 - (0.9 + 0.1 / 3), 1e-6);
  EXPECT_NEAR(d[1], 0.25 - 0.1 / 3, 1e-6);
  EXPECT_NEAR(d[2], 0.25 - 0.1 / 3, 1e-6);
}

// Against LibTorch's cross_entropy(label_smoothing) (the same definition:
// eps spread over every class, the target's included), masked rows
// excluded, and central differences; eps = 0 is the unsmoothed loss bit
// for bit.
TEST(SmoothedCrossEntropy, MatchesTorchAndDifferences) {
  const int64_t rows = 5, classes = 4;
  const float eps = 0.2f, scale = 0.25f;
  Rng rng(23);
  std::vector<float> logits = randomValues(rows * classes, rng, 4.f);
  std::vector<int32_t> targets = {0, 3, 1, 1, 2};
  std::vector<uint8_t> mask = {1, 1, 0, 1, 1};
  std::vector<float> work = logits, dLogits(rows * classes);
  double loss =
      smoothedCrossEntropyInPlace(work.data(), rows, classes, targets.data(),
                                  mask.data(), eps, scale, dLogits.data());

  torch::Tensor x = toTorch(logits, {rows, classes}, true);
  torch::Tensor t = torch::tensor({0, 3, 1, 1, 2}, torch::kLong);
  torch::Tensor m = torch::tensor({1., 1., 0., 1., 1.}, torch::kFloat64);
  namespace F = torch::nn::functional;
  torch::Tensor perRow = F::cross_entropy(
      x, t,
      F::CrossEntropyFuncOptions().label_smoothing(eps).reduction(
          torch::kNone));
  torch::Tensor reference = (perRow * m).sum();
  (reference * scale).backward();
  EXPECT_NEAR(loss, reference.item<double>(), 1e-5);
  expectClose(dLogits, x.grad(), "dLogits");

  auto lossOnly = [&] {
    std::vector<float> copy = logits;
    return scale * smoothedCrossEntropyInPlace(copy.data(), rows, classes,
                                               targets.data(), mask.data(), eps,
                                               1.f, nullptr);
  };
  expectFiniteDifferences(lossOnly, logits, dLogits, "dLogits", 8, 1e-2f);

  std::vector<float> plain = logits, smoothed0 = logits;
  std::vector<float> dPlain(rows * classes), dSmoothed0(rows * classes);
  double a =
      softmaxCrossEntropyInPlace(plain.data(), rows, classes, targets.data(),
                                 mask.data(), scale, dPlain.data());
  double b = smoothedCrossEntropyInPlace(smoothed0.data(), rows, classes,
                                         targets.data(), mask.data(), 0.f,
                                         scale, dSmoothed0.data());
  EXPECT_EQ(a, b);
  EXPECT_EQ(dPlain, dSmoothed0);
}

// The output layer leaves its bias to the loss (LogitBias): the loss,
// log-probabilities and gradient are those of logits + bias, and the
// bias's gradient is the column sums of dLogits over counted rows, at one
// and two threads, and the same in every run at two (chunks added in
// order).
TEST(SmoothedCrossEntropy, BiasAddedInTheLossPass) {
  const int64_t R = 73, V = 301; // enough work for parallelFor to split
  std::vector<float> logits(R * V), bias(V);
  std::vector<int32_t> targets(R);
  std::vector<uint8_t> mask(R);
  for (int64_t i = 0; i < R * V; ++i)
    logits[i] = float(std::sin(0.37 * double(i)) * 3);
  for (int64_t j = 0; j < V; ++j)
    bias[j] = float(std::cos(0.11 * double(j)));
  for (int64_t r = 0; r < R; ++r) {
    targets[r] = int32_t((r * 7) % V);
    mask[r] = r % 5 != 3;
  }
  std::vector<float> summed(logits), dSummed(R * V);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < V; ++j)
      summed[r * V + j] += bias[j];
  double expected =
      smoothedCrossEntropyInPlace(summed.data(), R, V, targets.data(),
                                  mask.data(), 0.1f, 0.5f, dSummed.data());
  std::vector<float> expectedDBias(V, 0.f);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < V; ++j)
      expectedDBias[j] += dSummed[r * V + j];
  int threadsBefore = cellrt::getNumThreads();
  std::vector<std::vector<float>> dBiasAt;
  for (int threads : {1, 2, 2}) {
    cellrt::setNumThreads(threads);
    std::vector<float> own(logits), d(R * V), dBias(V, 0.25f);
    double loss = smoothedCrossEntropyInPlace(own.data(), R, V, targets.data(),
                                              mask.data(), 0.1f, 0.5f, d.data(),
                                              {bias.data(), dBias.data()});
    EXPECT_NEAR(loss, expected, 1e-4 * std::abs(expected));
    for (int64_t i = 0; i < R * V; ++i) {
      ASSERT_NEAR(own[i], summed[i], 1e-5) << i;
      ASSERT_NEAR(d[i], dSummed[i], 1e-7) << i;
    }
    for (int64_t j = 0; j < V; ++j)
      ASSERT_NEAR(dBias[j], 0.25f + expectedDBias[j], 1e-5) << j;
    dBiasAt.push_back(dBias);
  }
  cellrt::setNumThreads(threadsBefore);
  EXPECT_EQ(dBiasAt[1], dBiasAt[2]);
  // Decoding's log-softmax adds it too.
  std::vector<float> own(logits), plain(summed);
  logSoftmax(own.data(), R, V, bias.data());
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < V; ++j)
      plain[r * V + j] = logits[r * V + j] + bias[j];
  logSoftmax(plain.data(), R, V);
  for (int64_t i = 0; i < R * V; ++i)
    ASSERT_NEAR(own[i], plain[i], 1e-6) << i;
}

// Training needs the loss and the gradient, not the log-probabilities:
// the gradient may take the logits' place (one [rows, vocabulary] array
// fewer written per update) and comes with its bf16 rounding when asked
// (for a bf16 output layer). The loss, the gradient and the bias gradient
// are the bits of the two-array call; the rounding is cellrt's; masked
// rows are zeros in both.
TEST(SmoothedCrossEntropy, GradientInPlaceAndRoundedGiveTheSameBits) {
  const int64_t R = 41, V = 517;
  std::vector<float> logits(R * V), bias(V);
  std::vector<int32_t> targets(R);
  std::vector<uint8_t> mask(R);
  for (int64_t i = 0; i < R * V; ++i)
    logits[i] = float(std::sin(0.29 * double(i)) * 4);
  for (int64_t j = 0; j < V; ++j)
    bias[j] = float(std::cos(0.13 * double(j)));
  for (int64_t r = 0; r < R; ++r) {
    targets[r] = int32_t((r * 11) % V);
    mask[r] = r % 6 != 2;
  }
  int threadsBefore = cellrt::getNumThreads();
  for (int threads : {1, 2}) {
    cellrt::setNumThreads(threads);
    for (float smoothing : {0.f, 0.1f}) {
      SCOPED_TRACE("smoothing " + std::to_string(smoothing) + ", " +
                   std::to_string(threads) + " threads");
      std::vector<float> separate(logits), d(R * V), dBias(V, 0.f);
      double expected = smoothedCrossEntropyInPlace(
          separate.data(), R, V, targets.data(), mask.data(), smoothing, 0.5f,
          d.data(), {bias.data(), dBias.data()});
      std::vector<float> inPlace(logits), dBiasInPlace(V, 0.f);
      std::vector<uint16_t> rounded(R * V, 0xffff);
      double loss = smoothedCrossEntropyInPlace(
          inPlace.data(), R, V, targets.data(), mask.data(), smoothing, 0.5f,
          inPlace.data(), {bias.data(), dBiasInPlace.data()}, rounded.data());
      EXPECT_EQ(loss, expected);
      EXPECT_EQ(inPlace, d);
      EXPECT_EQ(dBiasInPlace, dBias);
      for (int64_t i = 0; i < R * V; ++i)
        ASSERT_EQ(rounded[i], cellrt::roundToBf16(d[i])) << i;
      for (int64_t j = 0; j < V; ++j)
        ASSERT_EQ(rounded[2 * V + j], 0) << j;
    }
  }
  cellrt::setNumThreads(threadsBefore);
}

TEST(SoftmaxCrossEntropy, ArgmaxRows) {
  std::vector<float> scores = {0, 3, 1, 5, -1, 2};
  EXPECT_EQ(argmaxRows(scores.data(), 2, 3), (std::vector<int32_t>{1, 0}));
}

TEST(Dropout, ScalesKeptValuesAndBackwardUsesTheMask) {
  Dropout dropout(0.25f);
  Rng rng(4);
  const int64_t n = 20000;
  std::vector<float> x(n, 1.f), mask;
  dropout.forward(x.data(), n, &rng, mask);
  int64_t dropped = 0;
  for (float value : x) {
    EXPECT_TRUE(value == 0.f || value == 1.f / 0.75f);
    dropped += value == 0.f;
  }
  EXPECT_NEAR(double(dropped) / n, 0.25, 0.02);
  std::vector<float> dx(n, 2.f);
  dropout.backward(dx.data(), n, mask);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(dx[i], 2.f * x[i]);
}

TEST(Dropout, EvaluationIsTheIdentity) {
  Dropout dropout(0.5f);
  std::vector<float> x = {1, 2, 3}, mask = {9};
  dropout.forward(x.data(), 3, nullptr, mask);
  EXPECT_EQ(x, (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(mask.empty());
  std::vector<float> dx = {1, 1, 1};
  dropout.backward(dx.data(), 3, mask);
  EXPECT_EQ(dx, (std::vector<float>{1, 1, 1}));
}

} // namespace
