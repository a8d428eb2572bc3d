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

/// LN(x W) with the projection NAME's params, or x W + b without norms.
torch::Tensor normedProjection(std::map<std::string, torch::Tensor> &params,
                               const std::string &name,
                               const torch::Tensor &x, bool layerNorm) {
  torch::Tensor p = torch::matmul(x, params[name + ".W"].t());
  if (!layerNorm)
    return p + params[name + ".b"];
  return torch::layer_norm(p, {p.size(-1)}, params[name + "_norm.gain"],
                           params[name + "_norm.bias"], 1e-5);
}

/// Row (t, b)'s context: SR-NMT's attention over sentence b's memory.
torch::Tensor srnmtContext(std::map<std::string, torch::Tensor> &params,
                           const torch::Tensor &query,
                           const torch::Tensor &memory, int64_t length,
                           bool layerNorm, double scale) {
  const std::string a = "dec.attention.";
  torch::Tensor m = memory.narrow(0, 0, length);
  torch::Tensor q = torch::matmul(params[a + "Wa"], query),
                k = torch::matmul(m, params[a + "Ua"].t());
  torch::Tensor pre;
  if (layerNorm)
    pre = torch::layer_norm(q, {q.size(0)}, params[a + "query_norm.gain"],
                            params[a + "query_norm.bias"], 1e-5) +
          torch::layer_norm(k, {k.size(1)}, params[a + "key_norm.gain"],
                            params[a + "key_norm.bias"], 1e-5);
  else
    pre = q + k + params[a + "b"];
  torch::Tensor alpha =
      torch::softmax(torch::matmul(torch::tanh(pre), params[a + "v"]), 0);
  return torch::matmul(alpha, m) * scale;
}

/// SR-NMT divides the context by sqrt(d) (§3.2), a factor its layer norm of
/// c Wc undoes in the forward pass; the ablation without layer norms is the
/// same model less the norms, so without them the context is not scaled.
double contextScale(bool layerNorm, int64_t d) {
  return layerNorm ? 1.0 / std::sqrt(double(d)) : 1.0;
}

/// A decoder unit (options from the parameter) over random params, inputs
/// [T, B, I] and a memory [Tx, B, C] with its keys.
class WeaklyRecurrentDecoderTest
    : public testing::TestWithParam<std::tuple<bool, bool, bool>> {
protected:
  static constexpr int64_t T = 3, B = 2, d = 4, Tx = 4, C = 3, A = 5;

  void build(uint64_t seed, std::vector<int32_t> lengths) {
    std::tie(options.layerNorm, options.highway, options.attention) =
        GetParam();
    I = options.highway ? d : 3;
    layer = std::make_unique<WeaklyRecurrentDecoderLayer>(
        *scan.cell, store, "dec", I, d, C, A, options);
    Rng rng(seed);
    for (Param *p : store.all())
      uniformInit(p->value, 0.8f, rng);
    this->lengths = std::move(lengths);
    Yin = randomValues(T * B * I, rng);
    M = randomValues(Tx * B * C, rng);
    G = randomValues(T * B * d, rng);
    Y.resize(T * B * d);
    layer->precompute(M.data(), memoryLengths.data(), Tx, B, keys);
  }

  JitCell scan{gatedScanSource()};
  WeaklyRecurrentOptions options;
  int64_t I = 0;
  ParamStore store;
  std::unique_ptr<WeaklyRecurrentDecoderLayer> layer;
  std::vector<int32_t> lengths, memoryLengths = {2, 4};
  std::vector<float> Yin, M, G, Y;
  AdditiveAttention::Keys keys;
  WeaklyRecurrentDecoderLayer::Trace trace;
};

TEST_P(WeaklyRecurrentDecoderTest, MatchesTorchAndDifferences) {
  build(19, {3, 2});
  std::vector<float> dY(T * B * I, 0.f), dM(Tx * B * C, 0.f);
  layer->forward(keys, Yin.data(), lengths.data(), T, B, Y.data(), trace,
                 true);
  zeroGrads(store.all());
  layer->backward(keys, trace, G.data(), dY.data(), dM.data());

  torch::Tensor y = toTorch(Yin, {T, B, I}, true),
                memory = toTorch(M, {Tx, B, C}, true);
  std::map<std::string, torch::Tensor> params = torchParams(store);
  torch::Tensor p = normedProjection(params, "dec.W", y, options.layerNorm);
  torch::Tensor states =
      reference(scanStep, {p.narrow(2, 0, d), p.narrow(2, d, d)}, lengths,
                false, torch::zeros({B, d}, torch::kFloat64))
          .first;
  torch::Tensor pre =
      normedProjection(params, "dec.Ws", states, options.layerNorm);
  if (options.attention) {
    std::vector<torch::Tensor> rows;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t b = 0; b < B; ++b)
        rows.push_back(srnmtContext(params, states[t][b], memory.select(1, b),
                                    memoryLengths[b], options.layerNorm,
                                    contextScale(options.layerNorm, d)));
    torch::Tensor contexts = torch::stack(rows).reshape({T, B, C});
    pre = pre + normedProjection(params, "dec.Wc", contexts, options.layerNorm);
  }
  torch::Tensor o = torch::tanh(pre);
  torch::Tensor out = o;
  if (options.highway) {
    torch::Tensor gate = torch::sigmoid(p.narrow(2, 2 * d, d));
    out = (1 - gate) * o + gate * y;
  }
  out = out * validSteps(lengths, T);
  (out * toTorch(G, {T, B, d})).sum().backward();
  expectClose(Y, out, "Y");
  expectClose(dY, y.grad(), "dY");
  if (options.attention)
    expectClose(dM, memory.grad(), "dMemory");
  expectParamGradients(store, params);

  auto loss = [&] {
    AdditiveAttention::Keys fresh;
    layer->precompute(M.data(), memoryLengths.data(), Tx, B, fresh);
    layer->forward(fresh, Yin.data(), lengths.data(), T, B, Y.data(), trace,
                   false);
    return weightedSum(Y, G);
  };
  expectFiniteDifferences(loss, Yin, dY, "dY");
  if (options.attention)
    expectFiniteDifferences(loss, M, dM, "dMemory", 8);
  expectParamDifferences(loss, store);
}

// Decoding one step at a time from each row's previous states gives the
// training forward's outputs.
TEST_P(WeaklyRecurrentDecoderTest, StepsEqualTheSequence) {
  build(23, {3, 3});
  layer->forward(keys, Yin.data(), lengths.data(), T, B, Y.data(), trace,
                 false);
  // The rows swap places every step: each continues from its parent row.
  std::vector<int32_t> sentences = {1, 0}, parents = {1, 0};
  std::vector<float> states, next(B * d), out(B * d), input(B * I);
  for (int64_t t = 0; t < T; ++t) {
    bool swapped = t % 2 == 0;
    for (int64_t r = 0; r < B; ++r) {
      int64_t b = swapped ? sentences[r] : r;
      std::copy_n(Yin.data() + (t * B + b) * I, I, input.data() + r * I);
    }
    std::vector<int32_t> rowSentences =
        swapped ? sentences : std::vector<int32_t>{0, 1};
    layer->step(keys, input.data(), B, rowSentences.data(),
                states.empty() ? nullptr : states.data(), B,
                t == 0 ? nullptr : parents.data(), next.data(), out.data());
    for (int64_t r = 0; r < B; ++r)
      for (int64_t i = 0; i < d; ++i)
        EXPECT_NEAR(out[r * d + i], Y[(t * B + rowSentences[r]) * d + i],
                    1e-5)
            << "step " << t << " row " << r;
    states = next;
  }
}

// (layer norm, highway, attention): the unit and the paper's ablations.
INSTANTIATE_TEST_SUITE_P(Ablations, WeaklyRecurrentDecoderTest,
                         testing::Values(std::tuple{true, true, true},
                                         std::tuple{false, true, true},
                                         std::tuple{true, false, true},
                                         std::tuple{true, true, false}));

TEST(WeaklyRecurrentEncoder, NamesItsWidthErrors) {
  JitCell scan(gatedScanSource());
  ParamStore store;
  EXPECT_THROW(WeaklyRecurrentEncoderLayer(*scan.cell, store, "odd", 5, 5),
               DataError);
  EXPECT_THROW(WeaklyRecurrentEncoderLayer(*scan.cell, store, "narrow", 3, 4),
               DataError);
}

} // namespace
