//===- AdditiveAttentionTest.cpp - Bahdanau attention against LibTorch ----===//
//
// Two attend() calls share one precompute() (as two decoder steps do), so
// the keys' gradient must be summed across steps before keysBackward().
// The reference attends each row over its own sequence's valid prefix and
// never reads padded annotations, which hold junk here. Every case runs
// plain and as SR-NMT's attention (layer norms over the projected query and
// keys, the context scaled).
//
//===----------------------------------------------------------------------===//

#include "models/common/AdditiveAttention.h"

#include "LayerCheck.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace models;
using namespace layercheck;

namespace {

constexpr int Steps = 2;

struct AttentionCase {
  int64_t T, B, C, Q, A;
  std::vector<int32_t> lengths;
  /// 0: row r attends sequence r (R = B); else R = B * beam rows share
  /// their sequence through row2seq, as beam search does.
  int64_t beam;
};

/// The layer, its inputs, and the results of forward and backward.
struct AttentionRun {
  const AttentionCase &c;
  AttentionOptions options;
  ParamStore store;
  AdditiveAttention layer;
  int64_t R;
  std::vector<int32_t> row2seq;
  std::vector<float> ann, query[Steps], G[Steps], context[Steps];
  std::vector<float> dAnn, dQuery[Steps];
  AdditiveAttention::Keys keys;
  AdditiveAttention::Step steps[Steps];

  AttentionRun(const AttentionCase &c, const AttentionOptions &options)
      : c(c), options(options), layer(store, "att", c.Q, c.C, c.A, options),
        R(c.beam ? c.B * c.beam : c.B) {
    Rng rng(11);
    for (Param *p : store.all())
      uniformInit(p->value, 0.5f, rng);
    for (int64_t r = 0; c.beam && r < R; ++r)
      row2seq.push_back(int32_t(r / c.beam));
    ann = randomValues(c.T * c.B * c.C, rng);
    fillPadding(ann, c.lengths, c.T, c.C);
    for (int s = 0; s < Steps; ++s) {
      query[s] = randomValues(R * c.Q, rng);
      G[s] = randomValues(R * c.C, rng);
      context[s].resize(R * c.C);
    }
  }

  double forward() {
    layer.precompute(ann.data(), c.lengths.data(), c.T, c.B, keys);
    double loss = 0;
    for (int s = 0; s < Steps; ++s) {
      layer.attend(keys, query[s].data(), R,
                   row2seq.empty() ? nullptr : row2seq.data(), steps[s],
                   context[s].data());
      loss += weightedSum(context[s], G[s]);
    }
    return loss;
  }

  /// With deferQueryWeights, as a decoder does: Wa's gradient in one GEMM
  /// over both steps' stacked queries. With deferAnnotations, as the NMT
  /// decoder does: the weighted sums' part of dAnn after the last step.
  void backward(bool deferQueryWeights = false, bool deferAnnotations = false) {
    zeroGrads(store.all());
    dAnn.assign(ann.size(), 0.f);
    const int64_t A = c.A;
    std::vector<float> dProjected(Steps * R * A);
    for (int s = Steps - 1; s >= 0; --s) {
      dQuery[s].assign(query[s].size(), 0.f);
      layer.backward(
          keys, query[s].data(), steps[s], G[s].data(),
          deferAnnotations ? nullptr : dAnn.data(), dQuery[s].data(), true,
          deferQueryWeights ? dProjected.data() + s * R * A : nullptr);
    }
    if (deferAnnotations) {
      std::vector<float> dContexts;
      for (int s = 0; s < Steps; ++s)
        dContexts.insert(dContexts.end(), G[s].begin(), G[s].end());
      layer.annotationsBackward(keys, {&steps[0], &steps[1]}, dContexts.data(),
                                dAnn.data());
    }
    layer.keysBackward(keys, dAnn.data());
    if (!deferQueryWeights)
      return;
    std::vector<float> queries;
    for (int s = 0; s < Steps; ++s)
      queries.insert(queries.end(), query[s].begin(), query[s].end());
    layer.queryWeightBackward(queries.data(), Steps * R, dProjected.data());
  }

  Param &param(const char *name) {
    return *store.find(std::string("att.") + name);
  }
};

/// The reference's inputs, as float64 leaves.
struct TorchInputs {
  torch::Tensor ann, query[Steps], Wa, Ua, b, v;
  /// With layer norms: their gains and biases.
  torch::Tensor queryGain, queryBias, keyGain, keyBias;
};

torch::Tensor layerNorm(const torch::Tensor &x, const torch::Tensor &gain,
                        const torch::Tensor &bias) {
  return torch::layer_norm(x, {x.size(-1)}, gain, bias, 1e-5);
}

/// Row r's context: e = v . tanh(Wa q + Ua a_t + b) over its sequence's
/// valid prefix, softmax, sum of the weighted annotations.
torch::Tensor torchContext(const AttentionRun &run, const TorchInputs &in,
                           const torch::Tensor &query, int64_t r) {
  int64_t seq = run.row2seq.empty() ? r : run.row2seq[r];
  torch::Tensor a = in.ann.narrow(0, 0, run.c.lengths[seq]).select(1, seq);
  torch::Tensor q = torch::matmul(in.Wa, query[r]),
                k = torch::matmul(a, in.Ua.t());
  torch::Tensor pre = run.options.layerNorm
                          ? layerNorm(q, in.queryGain, in.queryBias) +
                                layerNorm(k, in.keyGain, in.keyBias)
                          : q + k + in.b;
  torch::Tensor alpha = torch::softmax(torch::matmul(torch::tanh(pre), in.v),
                                       /*dim=*/0);
  return torch::matmul(alpha, a) * run.options.contextScale;
}

/// The reference loss over both steps, from float64 leaves of the run's
/// inputs; checks each step's context on the way.
torch::Tensor torchLoss(AttentionRun &run, TorchInputs &in) {
  const AttentionCase &c = run.c;
  in.ann = toTorch(run.ann, {c.T, c.B, c.C}, true);
  in.Wa = toTorch(run.param("Wa").value, {c.A, c.Q}, true);
  in.Ua = toTorch(run.param("Ua").value, {c.A, c.C}, true);
  if (run.options.layerNorm) {
    in.queryGain = toTorch(run.param("query_norm.gain").value, {c.A}, true);
    in.queryBias = toTorch(run.param("query_norm.bias").value, {c.A}, true);
    in.keyGain = toTorch(run.param("key_norm.gain").value, {c.A}, true);
    in.keyBias = toTorch(run.param("key_norm.bias").value, {c.A}, true);
  } else {
    in.b = toTorch(run.param("b").value, {c.A}, true);
  }
  in.v = toTorch(run.param("v").value, {c.A}, true);
  torch::Tensor total = torch::zeros({}, torch::kFloat64);
  for (int s = 0; s < Steps; ++s) {
    in.query[s] = toTorch(run.query[s], {run.R, c.Q}, true);
    std::vector<torch::Tensor> rows;
    for (int64_t r = 0; r < run.R; ++r)
      rows.push_back(torchContext(run, in, in.query[s], r));
    torch::Tensor context = torch::stack(rows);
    expectClose(run.context[s], context, "context");
    total = total + (context * toTorch(run.G[s], {run.R, c.C})).sum();
  }
  return total;
}

/// Plain, or SR-NMT's.
AttentionOptions optionsFor(bool normed) {
  AttentionOptions options;
  options.layerNorm = normed;
  options.contextScale = normed ? 0.5f : 1.f;
  return options;
}

class AdditiveAttentionTest
    : public ::testing::TestWithParam<std::tuple<AttentionCase, bool>> {
protected:
  const AttentionCase &attentionCase() const { return std::get<0>(GetParam()); }
  AttentionOptions options() const {
    return optionsFor(std::get<1>(GetParam()));
  }
};

/// Forward, backward (Wa's gradient per step or deferred), and every
/// result against the reference.
void expectMatchesTorch(const AttentionCase &c, const AttentionOptions &options,
                        bool deferQueryWeights, bool deferAnnotations = false) {
  AttentionRun run(c, options);
  double loss = run.forward();
  run.backward(deferQueryWeights, deferAnnotations);
  TorchInputs in;
  torch::Tensor total = torchLoss(run, in);
  total.backward();
  EXPECT_NEAR(loss, total.item<double>(),
              1e-4 * std::max(1.0, std::fabs(loss)));
  expectClose(run.dAnn, in.ann.grad(), "dAnn");
  for (int s = 0; s < Steps; ++s)
    expectClose(run.dQuery[s], in.query[s].grad(), "dQuery");
  expectClose(run.param("Wa").grad, in.Wa.grad(), "dWa");
  expectClose(run.param("Ua").grad, in.Ua.grad(), "dUa");
  if (options.layerNorm) {
    expectClose(run.param("query_norm.gain").grad, in.queryGain.grad(), "dgq");
    expectClose(run.param("query_norm.bias").grad, in.queryBias.grad(), "dbq");
    expectClose(run.param("key_norm.gain").grad, in.keyGain.grad(), "dgk");
    expectClose(run.param("key_norm.bias").grad, in.keyBias.grad(), "dbk");
  } else {
    expectClose(run.param("b").grad, in.b.grad(), "db");
  }
  expectClose(run.param("v").grad, in.v.grad(), "dv");
}

TEST_P(AdditiveAttentionTest, MatchesTorch) {
  expectMatchesTorch(attentionCase(), options(), false);
}

TEST_P(AdditiveAttentionTest, DeferredQueryWeightsMatchTorch) {
  expectMatchesTorch(attentionCase(), options(), true);
}

// The NMT decoder adds the annotations' gradient through the weighted
// sums after its sweep (annotationsBackward); beams (rows sharing a
// sequence) are decoding's, never trained, and refused.
TEST_P(AdditiveAttentionTest, DeferredAnnotationsMatchTorch) {
  const AttentionCase c = attentionCase();
  if (!c.beam) {
    expectMatchesTorch(c, options(), true, /*deferAnnotations=*/true);
    return;
  }
  AttentionRun run(c, options());
  run.forward();
  EXPECT_THROW(run.backward(false, /*deferAnnotations=*/true),
               std::invalid_argument);
}

TEST_P(AdditiveAttentionTest, MatchesDifferences) {
  AttentionRun run(attentionCase(), options());
  run.forward();
  run.backward();
  auto loss = [&] { return run.forward(); };
  expectFiniteDifferences(loss, run.ann, run.dAnn, "dAnn", 8);
  for (int s = 0; s < Steps; ++s)
    expectFiniteDifferences(loss, run.query[s], run.dQuery[s], "dQuery");
  expectParamDifferences(loss, run.store);
}

TEST_P(AdditiveAttentionTest, PaddedAnnotationsGetNoGradient) {
  const AttentionCase c = attentionCase();
  AttentionRun run(c, options());
  run.forward();
  run.backward();
  expectZeroPadding(run.dAnn, c.lengths, c.T, c.C, "dAnn");
  // The weights past each length are exactly zero, the rest sum to one.
  for (int64_t r = 0; r < run.R; ++r) {
    int64_t seq = c.beam ? r / c.beam : r;
    double sum = 0;
    for (int64_t t = 0; t < c.T; ++t) {
      float alpha = run.steps[0].alpha[t * run.R + r];
      if (t >= c.lengths[seq])
        EXPECT_EQ(alpha, 0.f);
      sum += alpha;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AdditiveAttentionTest,
    ::testing::Combine(
        ::testing::Values(AttentionCase{5, 4, 3, 4, 6, {5, 1, 3, 2}, 0},
                          AttentionCase{1, 2, 4, 3, 5, {1, 1}, 0},
                          AttentionCase{4, 3, 5, 2, 3, {2, 4, 1}, 2},
                          AttentionCase{6, 1, 8, 8, 8, {6}, 3}),
        ::testing::Bool()),
    // Stable names: the default prints the case's bytes, pointers included,
    // which differ between the run that lists the tests and the one that
    // runs them.
    [](const auto &info) { return "Case" + std::to_string(info.index); });

TEST(AdditiveAttention, RegistersFourParameters) {
  ParamStore store;
  AdditiveAttention layer(store, "attention", 7, 5, 3);
  EXPECT_EQ(store.find("attention.Wa")->shape, (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(store.find("attention.Ua")->shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(store.find("attention.b")->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(store.find("attention.v")->shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(store.count(), 3 * 7 + 3 * 5 + 3 + 3);
}

TEST(AdditiveAttention, LayerNormReplacesTheKeyBias) {
  ParamStore store;
  AdditiveAttention layer(store, "attention", 7, 5, 3, optionsFor(true));
  EXPECT_EQ(store.find("attention.b"), nullptr);
  EXPECT_EQ(store.count(), 3 * 7 + 3 * 5 + 3 + 4 * 3);
}

TEST(AdditiveAttention, RejectsEmptyAndOverlongSequences) {
  ParamStore store;
  AdditiveAttention layer(store, "att", 2, 2, 2);
  std::vector<float> ann(3 * 2 * 2, 0.f), query(2 * 2, 0.f), context(2 * 2);
  AdditiveAttention::Keys keys;
  std::vector<int32_t> empty = {2, 0}, overlong = {4, 1}, fine = {3, 1};
  EXPECT_THROW(layer.precompute(ann.data(), empty.data(), 3, 2, keys),
               std::invalid_argument);
  EXPECT_THROW(layer.precompute(ann.data(), overlong.data(), 3, 2, keys),
               std::invalid_argument);
  layer.precompute(ann.data(), fine.data(), 3, 2, keys);
  AdditiveAttention::Step step;
  std::vector<int32_t> badRows = {0, 2};
  EXPECT_THROW(
      layer.attend(keys, query.data(), 2, badRows.data(), step, context.data()),
      std::invalid_argument);
  EXPECT_THROW(
      layer.attend(keys, query.data(), 3, nullptr, step, context.data()),
      std::invalid_argument);
}

} // namespace
