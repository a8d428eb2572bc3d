//===- CellLayerTest.cpp - Compiled cells as layers against LibTorch ------===//
//
// The cells are compiled by the JIT from small sources whose equations are
// written again here with LibTorch (float64). What is checked is the layer:
// binding widths, input projections, several inputs, reverse direction,
// initial and final states, stacking and both directions, ragged lengths,
// and a decoder's use one step at a time (length-1 sequences chained by
// their states while training; step() with a beam's parent rows).
//
//===----------------------------------------------------------------------===//

#include "models/common/CellLayer.h"
#include "models/common/ContextAwareEncoder.h"
#include "models/common/CyclicContext.h"
#include "models/common/Data.h"
#include "models/common/Recurrent.h"

#include "CellReference.h"
#include "LayerCheck.h"
#include "jit/Jit.h"

#include <gtest/gtest.h>

using namespace models;
using namespace layercheck;

namespace {

const char *kElman = R"(
cell rnn(x: [I]) {
  state h: [H]
  param W: [H, I], U: [H, H], b: [H]
  h' = tanh(W @ x + U @ h + b)
})";

const char *kTwoInputs = R"(
cell two(x: [I], c: [C]) {
  state h: [H]
  param W: [H, I], V: [H, C], U: [H, H]
  h' = tanh(W @ x + V @ c + U @ h)
})";

/// The input must be as wide as the state: the layer projects it.
const char *kSameWidth = R"(
cell same(x: [H]) {
  state h: [H]
  param U: [H, H]
  h' = tanh(U @ h + x)
})";

/// Two states, both carried (as LSTM's h and c).
const char *kTwoStates = R"(
cell twostates(x: [I]) {
  state h: [H], c: [H]
  param W: [H, I], U: [H, H], b: [H]
  c' = c + tanh(W @ x + U @ h + b)
  h' = tanh(c')
})";

/// Two gates whose weights the compiler stacks (Wz with Wc, Uz with Uc).
const char *kGated = R"(
cell gated(x: [I]) {
  state h: [H]
  param Wz: [H, I], Wc: [H, I], Uz: [H, H], Uc: [H, H]
  z = sigmoid(Wz @ x + Uz @ h)
  h' = z * h + (1 - z) * tanh(Wc @ x + Uc @ h)
})";

class ElmanLayerTest : public ::testing::TestWithParam<bool> {};

TEST_P(ElmanLayerTest, MatchesTorchWithStatesBothWays) {
  const bool reverse = GetParam();
  JitCell jit(kElman);
  const int64_t T = 4, B = 3, I = 5, H = 3;
  ParamStore store;
  CellLayer layer(*jit.cell, "enc", I, H, store, reverse);
  ASSERT_EQ(layer.outputWidth(), H);
  Rng rng(7);
  for (Param *p : store.all())
    uniformInit(p->value, 0.6f, rng);
  std::vector<int32_t> lengths = {4, 1, 3};
  std::vector<float> X = randomValues(T * B * I, rng),
                     h0 = randomValues(B * H, rng);
  std::vector<float> G = randomValues(T * B * H, rng),
                     Gf = randomValues(B * H, rng);

  std::vector<float> Y(T * B * H), dX(T * B * I, 0.f), dH0(B * H, 0.f);
  CellTrace trace;
  CellSequence sequence{{X.data()}, lengths.data(), T,
                        B,          {h0.data()},    Y.data()};
  layer.forward(sequence, trace, true);
  zeroGrads(store.all());
  layer.backward(trace, G.data(), {dX.data()}, {Gf.data()}, {dH0.data()});

  torch::Tensor x = toTorch(X, {T, B, I}, true), h = toTorch(h0, {B, H}, true);
  torch::Tensor W = toTorch(store.find("enc.W")->value, {H, I}, true);
  torch::Tensor U = toTorch(store.find("enc.U")->value, {H, H}, true);
  torch::Tensor b = toTorch(store.find("enc.b")->value, {H}, true);
  Step step = [&](const std::vector<torch::Tensor> &xs,
                  const torch::Tensor &s) {
    return torch::tanh(torch::mv(W, xs[0]) + torch::mv(U, s) + b);
  };
  auto [y, final] = reference(step, {x}, lengths, reverse, h);
  ((y * toTorch(G, {T, B, H})).sum() + (final * toTorch(Gf, {B, H})).sum())
      .backward();
  expectClose(Y, y, "Y");
  expectClose(trace.finalStates[0], final, "final state");
  expectClose(dX, x.grad(), "dX");
  expectClose(dH0, h.grad(), "dH0");
  expectClose(store.find("enc.W")->grad, W.grad(), "dW");
  expectClose(store.find("enc.U")->grad, U.grad(), "dU");
  expectClose(store.find("enc.b")->grad, b.grad(), "db");
  for (int64_t i : {1, 2, 3}) // padded positions of sequence 1
    for (int64_t j = 0; j < I; ++j)
      EXPECT_EQ(dX[(i * B + 1) * I + j], 0.f);

  auto loss = [&] {
    CellTrace evalTrace;
    layer.forward(sequence, evalTrace, false);
    return weightedSum(Y, G) + weightedSum(evalTrace.finalStates[0], Gf);
  };
  expectFiniteDifferences(loss, X, dX, "dX");
  std::vector<float> dU = store.find("enc.U")->grad;
  expectFiniteDifferences(loss, store.find("enc.U")->value, dU, "dU");
}

INSTANTIATE_TEST_SUITE_P(Directions, ElmanLayerTest, ::testing::Bool(),
                         [](const auto &info) {
                           return info.param ? "Reverse" : "Forward";
                         });

TEST(CellLayer, TwoInputsAndAProjectedInputMatchTorch) {
  JitCell two(kTwoInputs), same(kSameWidth);
  const int64_t T = 3, B = 2, I = 4, C = 6, H = 3;
  ParamStore store;
  CellLayer both(*two.cell, "two", std::vector<int64_t>{I, C}, H, store);
  CellLayer projected(*same.cell, "same", I, H, store);
  ASSERT_EQ(both.projection(0), nullptr);
  ASSERT_NE(projected.projection(0), nullptr);
  EXPECT_EQ(projected.projection(0)->weight().name, "same.proj_x.W");
  EXPECT_EQ(projected.projection(0)->weight().shape,
            (std::vector<int64_t>{H, I}));
  Rng rng(8);
  for (Param *p : store.all())
    uniformInit(p->value, 0.6f, rng);
  std::vector<int32_t> lengths = {3, 2};
  std::vector<float> X = randomValues(T * B * I, rng),
                     Cx = randomValues(T * B * C, rng);
  std::vector<float> G = randomValues(T * B * H, rng);

  // Both layers read x, so dX sums their gradients.
  std::vector<float> Y1(T * B * H), Y2(T * B * H), dX(T * B * I, 0.f),
      dC(T * B * C, 0.f);
  CellTrace t1, t2;
  both.forward({{X.data(), Cx.data()}, lengths.data(), T, B, {}, Y1.data()}, t1,
               true);
  projected.forward({{X.data()}, lengths.data(), T, B, {}, Y2.data()}, t2,
                    true);
  zeroGrads(store.all());
  both.backward(t1, G.data(), {dX.data(), dC.data()});
  projected.backward(t2, G.data(), {dX.data()});

  torch::Tensor x = toTorch(X, {T, B, I}, true),
                c = toTorch(Cx, {T, B, C}, true);
  auto param = [&](const std::string &name) {
    Param *p = store.find(name);
    return toTorch(p->value, p->shape, true);
  };
  torch::Tensor W = param("two.W"), V = param("two.V"), U = param("two.U");
  torch::Tensor P = param("same.proj_x.W"), U2 = param("same.U");
  Step twoStep = [&](const std::vector<torch::Tensor> &xs,
                     const torch::Tensor &s) {
    return torch::tanh(torch::mv(W, xs[0]) + torch::mv(V, xs[1]) +
                       torch::mv(U, s));
  };
  Step sameStep = [&](const std::vector<torch::Tensor> &xs,
                      const torch::Tensor &s) {
    return torch::tanh(torch::mv(U2, s) + torch::mv(P, xs[0]));
  };
  torch::Tensor zeros = torch::zeros({B, H}, torch::kFloat64);
  torch::Tensor y1 = reference(twoStep, {x, c}, lengths, false, zeros).first;
  torch::Tensor y2 = reference(sameStep, {x}, lengths, false, zeros).first;
  torch::Tensor g = toTorch(G, {T, B, H});
  ((y1 * g).sum() + (y2 * g).sum()).backward();
  expectClose(Y1, y1, "two: Y");
  expectClose(Y2, y2, "same: Y");
  expectClose(dX, x.grad(), "dX (both layers)");
  expectClose(dC, c.grad(), "dC");
  expectClose(store.find("two.V")->grad, V.grad(), "two: dV");
  expectClose(store.find("same.proj_x.W")->grad, P.grad(), "same: dProjection");
  expectClose(store.find("same.U")->grad, U2.grad(), "same: dU");
}

TEST(CellLayer, MismatchesNameTheCell) {
  JitCell two(kTwoInputs);
  ParamStore store;
  try {
    CellLayer layer(*two.cell, "dec", 4, 3, store);
    FAIL() << "a two-input cell took one input";
  } catch (const DataError &error) {
    EXPECT_STREQ(error.what(),
                 "cell two (dec): the cell has 2 inputs, the model gives it 1");
  }
}

/// kElman's step with the leaves PREFIX.W, PREFIX.U and PREFIX.b.
Step elmanStep(std::map<std::string, torch::Tensor> &params,
               const std::string &prefix) {
  return [&params, prefix](const std::vector<torch::Tensor> &xs,
                           const torch::Tensor &s) {
    return torch::tanh(torch::mv(params[prefix + ".W"], xs[0]) +
                       torch::mv(params[prefix + ".U"], s) +
                       params[prefix + ".b"]);
  };
}

/// An encoder's (SequenceEncoder's, ContextAwareEncoder's) forward and
/// backward over random inputs X [T, B, I] with the output gradient G
/// [T, B, outputWidth], its params drawn from `seed`.
struct EncoderRun {
  std::vector<float> X, G, Y, dX;
};

template <typename Encoder>
EncoderRun runEncoder(const Encoder &encoder, ParamStore &store,
                      const std::vector<int32_t> &lengths, int64_t T, int64_t I,
                      uint64_t seed) {
  const int64_t B = int64_t(lengths.size()), O = encoder.outputWidth();
  Rng rng(seed);
  for (Param *p : store.all())
    uniformInit(p->value, 0.7f, rng);
  EncoderRun run;
  run.X = randomValues(T * B * I, rng);
  run.G = randomValues(T * B * O, rng);
  run.Y.resize(T * B * O);
  run.dX.assign(T * B * I, 0.f);
  typename Encoder::Trace trace;
  encoder.forward(run.X.data(), lengths.data(), T, B, run.Y.data(), trace,
                  true);
  zeroGrads(store.all());
  encoder.backward(trace, run.G.data(), run.dX.data());
  return run;
}

TEST(SequenceEncoder, TwoBidirectionalLayersMatchTorch) {
  JitCell jit(kElman);
  const int64_t T = 4, B = 2, I = 3, H = 2;
  ParamStore store;
  SequenceEncoder encoder(*jit.cell, "enc", {I, H, 2, true}, store);
  ASSERT_EQ(encoder.outputWidth(), 2 * H);
  std::vector<int32_t> lengths = {2, 4};
  auto [X, G, Y, dX] = runEncoder(encoder, store, lengths, T, I, 12);

  torch::Tensor x = toTorch(X, {T, B, I}, true);
  std::map<std::string, torch::Tensor> params = torchParams(store);
  torch::Tensor zeros = torch::zeros({B, H}, torch::kFloat64), input = x;
  for (int l = 0; l < 2; ++l) {
    std::vector<torch::Tensor> outs;
    for (int d = 0; d < 2; ++d) {
      std::string name = "enc.l" + std::to_string(l) + (d ? ".bwd" : ".fwd");
      outs.push_back(
          reference(elmanStep(params, name), {input}, lengths, d == 1, zeros)
              .first);
    }
    input = torch::cat(outs, 2);
  }
  (input * toTorch(G, {T, B, 2 * H})).sum().backward();
  expectClose(Y, input, "Y");
  expectClose(dX, x.grad(), "dX");
  expectParamGradients(store, params);
}

// GNMT's and DeepLAU's shapes in one stack: a bidirectional layer, a
// forward one, then a backward one that adds its input to its output.
TEST(SequenceEncoder, MixedDirectionsAndResidualMatchTorch) {
  JitCell jit(kElman);
  const int64_t T = 5, B = 3, I = 3, H = 2;
  ParamStore store;
  using Dir = LayerDirection;
  EncoderShape shape{I,
                     H,
                     0,
                     false,
                     {Dir::Both, Dir::Forward, Dir::Backward},
                     /*residualFrom=*/2};
  SequenceEncoder encoder(*jit.cell, "enc", shape, store);
  ASSERT_EQ(encoder.outputWidth(), H);
  ASSERT_EQ(encoder.numCells(1), 1);
  EXPECT_TRUE(encoder.layer(2, 0).isReverse());
  EXPECT_EQ(encoder.lowestCell(false), &encoder.layer(0, 0));
  std::vector<int32_t> lengths = {5, 2, 4};
  auto [X, G, Y, dX] = runEncoder(encoder, store, lengths, T, I, 13);

  torch::Tensor x = toTorch(X, {T, B, I}, true);
  std::map<std::string, torch::Tensor> params = torchParams(store);
  torch::Tensor zeros = torch::zeros({B, H}, torch::kFloat64);
  auto run = [&](const std::string &name, const torch::Tensor &in,
                 bool reverse) {
    return reference(elmanStep(params, name), {in}, lengths, reverse, zeros)
        .first;
  };
  torch::Tensor l0 =
      torch::cat({run("enc.l0.fwd", x, false), run("enc.l0.bwd", x, true)}, 2);
  torch::Tensor l1 = run("enc.l1.fwd", l0, false);
  // The residual adds l1 only at each sequence's steps: padding stays 0.
  torch::Tensor valid = torch::zeros({T, B, 1}, torch::kFloat64);
  for (int64_t b = 0; b < B; ++b)
    valid.index_put_({torch::indexing::Slice(0, lengths[b]), b}, 1.0);
  torch::Tensor y = run("enc.l2.bwd", l1, true) + l1 * valid;
  (y * toTorch(G, {T, B, H})).sum().backward();
  expectClose(Y, y, "Y");
  expectClose(dX, x.grad(), "dX");
  expectParamGradients(store, params);
}

TEST(SequenceEncoder, ResidualNeedsEqualWidths) {
  JitCell jit(kElman);
  ParamStore store;
  EncoderShape shape{3, 2, 1, true, {}, /*residualFrom=*/0};
  EXPECT_THROW(SequenceEncoder(*jit.cell, "enc", shape, store), DataError);
}

// The context-aware encoder: a backward layer, then a forward one over
// [x ; backward state]; its output is the forward layer's (H wide).
TEST(ContextAwareEncoder, MatchesTorch) {
  JitCell jit(kElman);
  const int64_t T = 5, B = 3, I = 3, H = 4;
  ParamStore store;
  ContextAwareEncoder encoder(*jit.cell, "ca", I, H, store);
  ASSERT_EQ(encoder.outputWidth(), H);
  ASSERT_EQ(store.find("ca.fwd.W")->shape, (std::vector<int64_t>{H, I + H}));
  std::vector<int32_t> lengths = {5, 2, 4};
  auto [X, G, Y, dX] = runEncoder(encoder, store, lengths, T, I, 21);

  torch::Tensor x = toTorch(X, {T, B, I}, true);
  std::map<std::string, torch::Tensor> params = torchParams(store);
  torch::Tensor zeros = torch::zeros({B, H}, torch::kFloat64);
  torch::Tensor back = reference(elmanStep(params, "ca.bwd"), {x}, lengths,
                                 /*reverse=*/true, zeros)
                           .first;
  torch::Tensor y =
      reference(elmanStep(params, "ca.fwd"), {torch::cat({x, back}, 2)},
                lengths, /*reverse=*/false, zeros)
          .first;
  (y * toTorch(G, {T, B, H})).sum().backward();
  expectClose(Y, y, "Y");
  expectClose(dX, x.grad(), "dX");
  expectParamGradients(store, params);
}

// A one-input cell given two sources reads their concatenation: the same
// outputs and gradients (each source gets its columns') as a layer given
// the joined rows, through forward, backward and step.
TEST(CellLayer, OneInputCellJoinsItsSources) {
  JitCell jit(kElman);
  const int64_t T = 3, B = 2, I1 = 2, I2 = 3, H = 2;
  ParamStore store, joinedStore;
  CellLayer apart(*jit.cell, "enc", std::vector<int64_t>{I1, I2}, H, store);
  CellLayer joined(*jit.cell, "enc", I1 + I2, H, joinedStore);
  ASSERT_EQ(apart.numInputs(), 2u);
  ASSERT_EQ(apart.inputWidth(1), I2);
  Rng rng(43);
  for (Param *p : store.all())
    uniformInit(p->value, 0.7f, rng);
  for (size_t i = 0; i < store.all().size(); ++i)
    joinedStore.all()[i]->value = store.all()[i]->value;
  std::vector<int32_t> lengths = {3, 2};
  std::vector<float> X1 = randomValues(T * B * I1, rng),
                     X2 = randomValues(T * B * I2, rng),
                     G = randomValues(T * B * H, rng), X;
  for (int64_t r = 0; r < T * B; ++r) {
    X.insert(X.end(), X1.begin() + r * I1, X1.begin() + (r + 1) * I1);
    X.insert(X.end(), X2.begin() + r * I2, X2.begin() + (r + 1) * I2);
  }
  std::vector<float> Y(T * B * H), Yj(T * B * H), dX1(T * B * I1, 0.f),
      dX2(T * B * I2, 0.f), dX(T * B * (I1 + I2), 0.f);
  CellTrace trace, joinedTrace;
  apart.forward({{X1.data(), X2.data()}, lengths.data(), T, B, {}, Y.data()},
                trace, true);
  joined.forward({{X.data()}, lengths.data(), T, B, {}, Yj.data()}, joinedTrace,
                 true);
  EXPECT_EQ(Y, Yj);
  zeroGrads(store.all());
  zeroGrads(joinedStore.all());
  apart.backward(trace, G.data(), {dX1.data(), dX2.data()});
  joined.backward(joinedTrace, G.data(), {dX.data()});
  for (int64_t r = 0; r < T * B; ++r)
    for (int64_t i = 0; i < I1 + I2; ++i)
      EXPECT_EQ(i < I1 ? dX1[r * I1 + i] : dX2[r * I2 + i - I1],
                dX[r * (I1 + I2) + i]);
  for (size_t i = 0; i < store.all().size(); ++i)
    EXPECT_EQ(store.all()[i]->grad, joinedStore.all()[i]->grad);

  std::vector<float> next(B * H), nextJoined(B * H), out(B * H),
      outJoined(B * H);
  apart.step(
      {{X1.data(), X2.data()}, B, {}, B, nullptr, {next.data()}, out.data()},
      nullptr);
  joined.step(
      {{X.data()}, B, {}, B, nullptr, {nextJoined.data()}, outJoined.data()},
      nullptr);
  EXPECT_EQ(out, outJoined);
}

// A layer sharing another's params (Cseq2seq's encoder run both ways) runs
// them in its own direction, and its gradients add to the owner's.
TEST(CellLayer, SharingRunsTheOwnersParamsAndAddsItsGradients) {
  JitCell jit(kElman);
  const int64_t T = 4, B = 2, I = 3, H = 2;
  ParamStore store;
  CellLayer owner(*jit.cell, "enc", I, H, store);
  CellLayer twin = CellLayer::sharing(owner, /*reverse=*/true);
  ASSERT_EQ(store.all().size(), 3u);
  EXPECT_TRUE(twin.isReverse());
  Rng rng(41);
  for (Param *p : store.all())
    uniformInit(p->value, 0.7f, rng);
  std::vector<int32_t> lengths = {4, 3};
  std::vector<float> X = randomValues(T * B * I, rng),
                     G1 = randomValues(T * B * H, rng),
                     G2 = randomValues(T * B * H, rng);
  std::vector<float> Y1(T * B * H), Y2(T * B * H), dX(T * B * I, 0.f);
  CellTrace trace1, trace2;
  owner.forward({{X.data()}, lengths.data(), T, B, {}, Y1.data()}, trace1,
                true);
  twin.forward({{X.data()}, lengths.data(), T, B, {}, Y2.data()}, trace2, true);
  zeroGrads(store.all());
  owner.backward(trace1, G1.data(), {dX.data()});
  twin.backward(trace2, G2.data(), {dX.data()});

  torch::Tensor x = toTorch(X, {T, B, I}, true);
  std::map<std::string, torch::Tensor> params = torchParams(store);
  torch::Tensor zeros = torch::zeros({B, H}, torch::kFloat64);
  torch::Tensor y1 =
      reference(elmanStep(params, "enc"), {x}, lengths, false, zeros).first;
  torch::Tensor y2 =
      reference(elmanStep(params, "enc"), {x}, lengths, true, zeros).first;
  ((y1 * toTorch(G1, {T, B, H})).sum() + (y2 * toTorch(G2, {T, B, H})).sum())
      .backward();
  expectClose(Y1, y1, "Y1");
  expectClose(Y2, y2, "Y2");
  expectClose(dX, x.grad(), "dX");
  expectParamGradients(store, params);
}

// Cseq2seq-I's context: the cell re-reads the sequence from tanh(V q + b)
// per query; the context is its last output or the mean of its outputs.
class CyclicContextTest : public testing::TestWithParam<CyclicContext::Pool> {};

TEST_P(CyclicContextTest, MatchesTorch) {
  const CyclicContext::Pool pool = GetParam();
  JitCell jit(kElman);
  const int64_t T = 4, B = 3, C = 3, Q = 2, H = 3;
  ParamStore store;
  CyclicContext cyclic(*jit.cell, "cyc", Q, C, H, pool, store);
  // W @ x is computed once per sequence, not once per query.
  EXPECT_TRUE(cyclic.sharesInputProducts());
  Rng rng(31);
  for (Param *p : store.all())
    uniformInit(p->value, 0.7f, rng);
  std::vector<int32_t> lengths = {4, 1, 3};
  std::vector<float> X = randomValues(T * B * C, rng),
                     Qs = randomValues(B * Q, rng),
                     G = randomValues(B * H, rng);
  std::vector<float> context(B * H), dX(T * B * C, 0.f), dQ(B * Q);
  CyclicContext::Sequence sequence;
  CyclicContext::Step step;
  cyclic.precompute(X.data(), lengths.data(), T, B, sequence);
  cyclic.forward(sequence, Qs.data(), B, nullptr, step, context.data(), true);
  zeroGrads(store.all());
  cyclic.backward(sequence, step, Qs.data(), G.data(), dQ.data());
  cyclic.sequenceBackward(sequence, dX.data());

  torch::Tensor x = toTorch(X, {T, B, C}, true), q = toTorch(Qs, {B, Q}, true);
  std::map<std::string, torch::Tensor> params = torchParams(store);
  torch::Tensor init =
      torch::tanh(torch::matmul(q, params["cyc.V.W"].t()) + params["cyc.V.b"]);
  auto [outputs, finals] =
      reference(elmanStep(params, "cyc.cell"), {x}, lengths, false, init);
  torch::Tensor expected = finals;
  if (pool == CyclicContext::Pool::Mean) {
    torch::Tensor counts = torch::tensor(
        std::vector<double>(lengths.begin(), lengths.end()), torch::kFloat64);
    expected = outputs.sum(0) / counts.unsqueeze(1);
  }
  (expected * toTorch(G, {B, H})).sum().backward();
  expectClose(context, expected, "context");
  expectClose(dX, x.grad(), "dX");
  expectClose(dQ, q.grad(), "dQ");
  expectParamGradients(store, params);

  // Rows that read other rows' sequences (beam search) get those rows'
  // contexts.
  std::vector<int32_t> sentences = {2, 0, 2, 1};
  std::vector<float> queries, gathered(4 * H);
  for (int32_t b : sentences)
    queries.insert(queries.end(), Qs.begin() + b * Q, Qs.begin() + (b + 1) * Q);
  CyclicContext::Step beam;
  cyclic.forward(sequence, queries.data(), 4, sentences.data(), beam,
                 gathered.data(), false);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t i = 0; i < H; ++i)
      EXPECT_FLOAT_EQ(gathered[r * H + i], context[sentences[r] * H + i]);
}

INSTANTIATE_TEST_SUITE_P(Pools, CyclicContextTest,
                         testing::Values(CyclicContext::Pool::Last,
                                         CyclicContext::Pool::Mean));

/// The two-state cell written with LibTorch.
struct TwoStatesReference {
  torch::Tensor W, U, b;
  explicit TwoStatesReference(ParamStore &store, const std::string &prefix) {
    W = toTorch(store.find(prefix + ".W")->value,
                store.find(prefix + ".W")->shape, true);
    U = toTorch(store.find(prefix + ".U")->value,
                store.find(prefix + ".U")->shape, true);
    b = toTorch(store.find(prefix + ".b")->value, {W.size(0)}, true);
  }
  /// One step of rows x [R, I], h and c [R, H]: the new (h, c).
  std::pair<torch::Tensor, torch::Tensor> step(const torch::Tensor &x,
                                               const torch::Tensor &h,
                                               const torch::Tensor &c) const {
    torch::Tensor next =
        c + torch::tanh(torch::matmul(x, W.t()) + torch::matmul(h, U.t()) + b);
    return {torch::tanh(next), next};
  }
};

/// A decoder's training loop: T length-1 sequences, each starting from the
/// previous one's final states, backpropagated last step first with the
/// state gradients handed from step to step.
struct StepwiseRun {
  static constexpr int64_t T = 3, B = 2, I = 4, H = 3;
  JitCell jit{kTwoStates};
  ParamStore store;
  CellLayer layer{*jit.cell, "dec", I, H, store};
  std::vector<int32_t> ones = std::vector<int32_t>(B, 1);
  std::vector<float> X, h0, G, Gf, Y, dX, dH0;
  std::vector<CellTrace> traces = std::vector<CellTrace>(T);

  StepwiseRun() {
    Rng rng(17);
    for (Param *p : store.all())
      uniformInit(p->value, 0.6f, rng);
    X = randomValues(T * B * I, rng);
    h0 = randomValues(B * H, rng);
    G = randomValues(T * B * H, rng);
    Gf = randomValues(B * H, rng);
    Y.resize(T * B * H);
  }

  /// sum(Y * G) + sum(h_T * Gf).
  double forward(bool train) {
    std::vector<const float *> states = {h0.data()}; // c starts at zero
    for (int64_t t = 0; t < T; ++t) {
      layer.forward({{X.data() + t * B * I},
                     ones.data(),
                     1,
                     B,
                     states,
                     Y.data() + t * B * H},
                    traces[t], train);
      states = {traces[t].finalStates[0].data(),
                traces[t].finalStates[1].data()};
    }
    return weightedSum(Y, G) + weightedSum(traces[T - 1].finalStates[0], Gf);
  }

  void backward() {
    zeroGrads(store.all());
    dX.assign(X.size(), 0.f);
    std::vector<std::vector<float>> after = {Gf, std::vector<float>(B * H)};
    std::vector<std::vector<float>> before(2, std::vector<float>(B * H));
    for (int64_t t = T - 1; t >= 0; --t) {
      for (std::vector<float> &state : before)
        std::fill(state.begin(), state.end(), 0.f);
      layer.backward(traces[t], G.data() + t * B * H, {dX.data() + t * B * I},
                     {after[0].data(), after[1].data()},
                     {before[0].data(), before[1].data()});
      after.swap(before);
    }
    dH0 = after[0];
  }
};

TEST(CellLayer, LengthOneStepsChainedByStatesMatchTorch) {
  StepwiseRun run;
  const int64_t T = run.T, B = run.B, I = run.I, H = run.H;
  double loss = run.forward(true);
  run.backward();

  TwoStatesReference ref(run.store, "dec");
  torch::Tensor x = toTorch(run.X, {T, B, I}, true);
  torch::Tensor h = toTorch(run.h0, {B, H}, true), h0 = h;
  torch::Tensor c = torch::zeros({B, H}, torch::kFloat64);
  std::vector<torch::Tensor> outputs;
  for (int64_t t = 0; t < T; ++t) {
    std::tie(h, c) = ref.step(x[t], h, c);
    outputs.push_back(h);
  }
  torch::Tensor y = torch::stack(outputs);
  torch::Tensor total = (y * toTorch(run.G, {T, B, H})).sum() +
                        (h * toTorch(run.Gf, {B, H})).sum();
  total.backward();
  EXPECT_NEAR(loss, total.item<double>(), 1e-4);
  expectClose(run.Y, y, "Y");
  expectClose(run.dX, x.grad(), "dX");
  expectClose(run.dH0, h0.grad(), "dH0");
  expectClose(run.store.find("dec.W")->grad, ref.W.grad(), "dW");
  expectClose(run.store.find("dec.U")->grad, ref.U.grad(), "dU");
  expectClose(run.store.find("dec.b")->grad, ref.b.grad(), "db");

  auto lossOnly = [&] { return run.forward(false); };
  expectFiniteDifferences(lossOnly, run.X, run.dX, "dX");
  expectFiniteDifferences(lossOnly, run.h0, run.dH0, "dH0");
  expectParamDifferences(lossOnly, run.store);
}

// A decoder trained one step at a time stacks its weights once per batch
// (CellSequence::packed) instead of at every step's forward: the outputs
// and every gradient are those of steps that stack their own, up to the
// last bits (with 5 rows the forward's products read oneDNN's packed copy).
TEST(CellLayer, StepsTrainedWithPackedWeightsMatchStepsWithout) {
  JitCell jit(kGated);
  const int64_t T = 3, B = 5, I = 4, H = 6;
  ParamStore store;
  CellLayer layer(*jit.cell, "dec", I, H, store);
  Rng rng(23);
  for (Param *p : store.all())
    uniformInit(p->value, 0.6f, rng);
  std::vector<float> X = randomValues(T * B * I, rng),
                     h0 = randomValues(B * H, rng),
                     G = randomValues(T * B * H, rng);
  std::vector<int32_t> ones(B, 1);
  struct Run {
    std::vector<float> Y, dX, dH0;
    std::vector<std::vector<float>> grads;
  };
  auto train = [&](bool packOnce) {
    Run run{std::vector<float>(T * B * H),
            std::vector<float>(T * B * I),
            std::vector<float>(B * H, 0.f),
            {}};
    cellrt::PackedWeights packed;
    if (packOnce)
      packed = layer.packWeights();
    std::vector<CellTrace> traces(T);
    std::vector<const float *> states = {h0.data()};
    for (int64_t t = 0; t < T; ++t) {
      layer.forward({{X.data() + t * B * I},
                     ones.data(),
                     1,
                     B,
                     states,
                     run.Y.data() + t * B * H,
                     packOnce ? &packed : nullptr},
                    traces[t], true);
      states = traces[t].finalStatePointers();
    }
    zeroGrads(store.all());
    std::vector<float> before(B * H);
    for (int64_t t = T - 1; t >= 0; --t) {
      std::fill(before.begin(), before.end(), 0.f);
      layer.backward(traces[t], G.data() + t * B * H,
                     {run.dX.data() + t * B * I}, {run.dH0.data()},
                     {before.data()});
      run.dH0.swap(before);
    }
    for (Param *p : store.all())
      run.grads.push_back(p->grad);
    return run;
  };
  Run plain = train(false), packed = train(true);
  expectClose(packed.Y, toTorch(plain.Y, {T, B, H}), "Y", 1e-5);
  expectClose(packed.dX, toTorch(plain.dX, {T, B, I}), "dX", 1e-5);
  expectClose(packed.dH0, toTorch(plain.dH0, {B, H}), "dH0", 1e-5);
  std::vector<Param *> params = store.all();
  ASSERT_EQ(params.size(), 4u);
  for (size_t k = 0; k < params.size(); ++k)
    expectClose(packed.grads[k], toTorch(plain.grads[k], params[k]->shape),
                params[k]->name, 1e-5);
}

TEST(CellLayer, InferenceStepsStartFromTheirSourceRows) {
  JitCell jit(kTwoStates);
  const int64_t I = 3, H = 4, stateRows = 3, rows = 4;
  ParamStore store;
  CellLayer layer(*jit.cell, "dec", I, H, store);
  Rng rng(19);
  for (Param *p : store.all())
    uniformInit(p->value, 0.6f, rng);
  std::vector<float> X = randomValues(rows * I, rng);
  std::vector<float> h = randomValues(stateRows * H, rng),
                     c = randomValues(stateRows * H, rng);
  std::vector<int32_t> sourceRows = {2, 0, 2, 1};
  std::vector<float> Y(rows * H), nextH(rows * H), nextC(rows * H);
  cellrt::PackedWeights packed = layer.packWeights();
  const cellrt::PackedWeights *stacked = &packed, *none = nullptr;
  for (const cellrt::PackedWeights *weights : {stacked, none}) {
    std::fill(Y.begin(), Y.end(), 0.f);
    layer.step({{X.data()},
                rows,
                {h.data(), c.data()},
                stateRows,
                sourceRows.data(),
                {nextH.data(), nextC.data()},
                Y.data()},
               weights);
    TwoStatesReference ref(store, "dec");
    torch::Tensor index = torch::tensor({2, 0, 2, 1}, torch::kLong);
    auto [refH, refC] =
        ref.step(toTorch(X, {rows, I}),
                 toTorch(h, {stateRows, H}).index_select(0, index),
                 toTorch(c, {stateRows, H}).index_select(0, index));
    expectClose(Y, refH, "output");
    expectClose(nextH, refH, "next h");
    expectClose(nextC, refC, "next c");
  }
  // No states: both start at zero.
  layer.step({{X.data()},
              rows,
              {},
              0,
              nullptr,
              {nextH.data(), nextC.data()},
              Y.data()},
             &packed);
  TwoStatesReference ref(store, "dec");
  torch::Tensor zeros = torch::zeros({rows, H}, torch::kFloat64);
  expectClose(Y, ref.step(toTorch(X, {rows, I}), zeros, zeros).first,
              "output from zeros");
}

TEST(SequenceEncoder, TakesTheModelsLayerNames) {
  JitCell jit(kElman);
  ParamStore store;
  SequenceEncoder encoder(*jit.cell, {3, 2, 1, true}, store,
                          [](int64_t layer, int64_t direction) {
                            return direction == 0 ? "fore" : "back";
                          });
  std::vector<std::string> names;
  for (Param *p : store.all())
    names.push_back(p->name);
  EXPECT_EQ(names, (std::vector<std::string>{"fore.W", "fore.U", "fore.b",
                                             "back.W", "back.U", "back.b"}));
  EXPECT_FALSE(encoder.layer(0, 0).isReverse());
  EXPECT_TRUE(encoder.layer(0, 1).isReverse());
}

} // namespace
