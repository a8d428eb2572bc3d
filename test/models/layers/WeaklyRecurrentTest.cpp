//===- WeaklyRecurrentTest.cpp - SR-NMT's units against LibTorch ----------===//
//
// The encoder unit (both scans, one layer norm over the joint projection,
// the highway) with the paper's ablations, against the equations of §3.1
// written with LibTorch autograd in float64, and against finite
// differences.
//
//===----------------------------------------------------------------------===//

#include "models/common/Data.h"
#include "models/common/WeaklyRecurrent.h"

#include "CellReference.h"
#include "LayerCheck.h"

#include <gtest/gtest.h>

using namespace models;
using namespace layercheck;

namespace {

/// The scan as LibTorch ops: inputs (x, g), state s.
torch::Tensor scanStep(const std::vector<torch::Tensor> &xs,
                       const torch::Tensor &s) {
  torch::Tensor gate = torch::sigmoid(xs[1]);
  return (1 - gate) * s + gate * xs[0];
}

/// Zero at each sequence's padded steps, one elsewhere: [T, B, 1].
torch::Tensor validSteps(const std::vector<int32_t> &lengths, int64_t T) {
  const int64_t B = int64_t(lengths.size());
  torch::Tensor valid = torch::zeros({T, B, 1}, torch::kFloat64);
  for (int64_t b = 0; b < B; ++b)
    valid.index_put_({torch::indexing::Slice(0, lengths[b]), b}, 1.0);
  return valid;
}

class WeaklyRecurrentEncoderTest
    : public testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(WeaklyRecurrentEncoderTest, MatchesTorchAndDifferences) {
  WeaklyRecurrentOptions options;
  std::tie(options.layerNorm, options.highway) = GetParam();
  JitCell scan(gatedScanSource());
  const int64_t T = 4, B = 3, d = 4, h = d / 2, I = options.highway ? d : 3;
  ParamStore store;
  WeaklyRecurrentEncoderLayer layer(*scan.cell, store, "enc", I, d, options);
  Rng rng(17);
  for (Param *p : store.all())
    uniformInit(p->value, 0.8f, rng);
  std::vector<int32_t> lengths = {4, 1, 3};
  std::vector<float> X = randomValues(T * B * I, rng),
                     G = randomValues(T * B * d, rng);
  std::vector<float> Y(T * B * d), dX(T * B * I, 0.f);
  WeaklyRecurrentEncoderLayer::Trace trace;
  layer.forward(X.data(), lengths.data(), T, B, Y.data(), trace, true);
  zeroGrads(store.all());
  layer.backward(trace, G.data(), dX.data());

  torch::Tensor x = toTorch(X, {T, B, I}, true);
  std::map<std::string, torch::Tensor> params = torchParams(store);
  torch::Tensor p = torch::matmul(x, params["enc.W.W"].t());
  if (options.layerNorm)
    p = torch::layer_norm(p, {p.size(2)}, params["enc.W_norm.gain"],
                          params["enc.W_norm.bias"], 1e-5);
  else
    p = p + params["enc.W.b"];
  torch::Tensor zeros = torch::zeros({B, h}, torch::kFloat64);
  auto part = [&](int64_t k, int64_t width) {
    return p.narrow(2, k * h, width);
  };
  torch::Tensor forwardStates =
      reference(scanStep, {part(0, h), part(2, h)}, lengths, false, zeros)
          .first;
  torch::Tensor backwardStates =
      reference(scanStep, {part(1, h), part(3, h)}, lengths, true, zeros)
          .first;
  torch::Tensor y = torch::cat({forwardStates, backwardStates}, 2);
  if (options.highway) {
    torch::Tensor gate = torch::sigmoid(part(4, 2 * h));
    y = ((1 - gate) * y + gate * x) * validSteps(lengths, T);
  }
  (y * toTorch(G, {T, B, d})).sum().backward();
  expectClose(Y, y, "Y");
  expectClose(dX, x.grad(), "dX");
  expectParamGradients(store, params);

  auto loss = [&] {
    layer.forward(X.data(), lengths.data(), T, B, Y.data(), trace, false);
    return weightedSum(Y, G);
  };
  expectFiniteDifferences(loss, X, dX, "dX");
  expectParamDifferences(loss, store);
}

// (layer norm, highway): the unit and the paper's two unit ablations.
INSTANTIATE_TEST_SUITE_P(Ablations, WeaklyRecurrentEncoderTest,
                         testing::Values(std::tuple{true, true},
                                         std::tuple{false, true},
                                         std::tuple{true, false}));

TEST(WeaklyRecurrentEncoder, NamesItsWidthErrors) {
  JitCell scan(gatedScanSource());
  ParamStore store;
  EXPECT_THROW(WeaklyRecurrentEncoderLayer(*scan.cell, store, "odd", 5, 5),
               DataError);
  EXPECT_THROW(WeaklyRecurrentEncoderLayer(*scan.cell, store, "narrow", 3, 4),
               DataError);
}

} // namespace
