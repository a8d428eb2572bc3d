//===- CrfTest.cpp - The CRF against enumeration, LibTorch and differences ===//
//
// With K = 4 tags and T <= 6 steps every one of the K^T tag paths can be
// scored, so decoding, both losses and log Z are checked against brute
// force; the log-likelihood's gradients against LibTorch autograd in
// float64, and both losses' gradients against central differences.
//
//===----------------------------------------------------------------------===//

#include "models/common/Crf.h"

#include "LayerCheck.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

using namespace models;
using namespace layercheck;

namespace {

constexpr int64_t K = 4;

/// A CRF with random parameters, and one sentence: emissions [T, K] and
/// gold tags [T].
struct Problem {
  ParamStore store;
  LinearChainCrf crf;
  int64_t T;
  std::vector<float> emissions;
  std::vector<int32_t> gold;

  Problem(int64_t T, uint64_t seed) : crf(store, "crf", K), T(T) {
    Rng rng(seed);
    for (Param *p : store.all())
      uniformInit(p->value, 1.f, rng);
    emissions = randomValues(T * K, rng, 2.f);
    for (int64_t t = 0; t < T; ++t)
      gold.push_back(int32_t(rng.below(K)));
  }
  const std::vector<float> &trans() { return crf.transitions().value; }
  const std::vector<float> &start() { return crf.start().value; }
  const std::vector<float> &end() { return crf.end().value; }
};

/// s(y) written out again, independently of the class.
double bruteScore(Problem &p, const std::vector<int32_t> &y) {
  double s = double(p.start()[y[0]]) + p.end()[y[p.T - 1]];
  for (int64_t t = 0; t < p.T; ++t)
    s += p.emissions[t * K + y[t]];
  for (int64_t t = 1; t < p.T; ++t)
    s += p.trans()[y[t - 1] * K + y[t]];
  return s;
}

/// Every path's s(y) + cost * Hamming(y, gold): the best path, the best and
/// second-best of those scores, and log Z (of the plain scores).
struct Enumeration {
  std::vector<int32_t> best;
  double bestScore = -INFINITY, secondScore = -INFINITY, logZ = 0;
};

Enumeration enumerate(Problem &p, float cost) {
  Enumeration e;
  std::vector<double> plain;
  std::vector<int32_t> y(p.T, 0);
  for (int64_t t = 0; t < p.T;) {
    double s = bruteScore(p, y);
    plain.push_back(s);
    for (int64_t u = 0; u < p.T; ++u)
      s += y[u] != p.gold[u] ? double(cost) : 0.0;
    if (s > e.bestScore) {
      e.secondScore = e.bestScore;
      e.bestScore = s;
      e.best = y;
    } else {
      e.secondScore = std::max(e.secondScore, s);
    }
    // The next path, counting in base K with y[0] the lowest digit.
    for (t = 0; t < p.T && ++y[t] == K; ++t)
      y[t] = 0;
  }
  double top = *std::max_element(plain.begin(), plain.end()), sum = 0;
  for (double s : plain)
    sum += std::exp(s - top);
  e.logZ = top + std::log(sum);
  return e;
}

TEST(Crf, ViterbiMatchesEnumeration) {
  for (uint64_t seed = 1; seed <= 4; ++seed)
    for (int64_t T = 1; T <= 5; ++T) {
      Problem p(T, seed * 10 + T);
      Enumeration e = enumerate(p, 0.f);
      ASSERT_GT(e.bestScore - e.secondScore, 1e-9) << "a tie";
      std::vector<int32_t> path = p.crf.viterbi(p.emissions.data(), T);
      EXPECT_EQ(path, e.best) << "seed " << seed << ", T " << T;
      EXPECT_NEAR(p.crf.score(p.emissions.data(), T, path.data()), e.bestScore,
                  1e-9);
    }
}

TEST(Crf, MaxMarginMatchesEnumeration) {
  for (float cost : {0.2f, 1.f})
    for (uint64_t seed = 1; seed <= 4; ++seed)
      for (int64_t T = 1; T <= 5; ++T) {
        Problem p(T, seed * 10 + T);
        double expected = enumerate(p, cost).bestScore - bruteScore(p, p.gold);
        double loss = p.crf.maxMarginLoss(p.emissions.data(), T, p.gold.data(),
                                          cost, nullptr);
        EXPECT_NEAR(loss, expected, 1e-9) << "seed " << seed << ", T " << T;
        EXPECT_GE(loss, 0.0);
      }
}

/// Every gradient of the problem's CRF, and dEmissions, is exactly zero.
void expectNoGradient(Problem &p, const std::vector<float> &dEmissions) {
  for (float d : dEmissions)
    EXPECT_EQ(d, 0.f);
  for (Param *param : p.store.all())
    for (float g : param->grad)
      EXPECT_EQ(g, 0.f) << param->name;
}

TEST(Crf, MaxMarginIsZeroWhenGoldWinsByTheMargin) {
  Problem p(5, 7);
  // Any other path loses at least 20 - 4 on emissions and gains at most 2 on
  // each of the 6 start, end and transition features (all in [-1, 1]).
  for (int64_t t = 0; t < p.T; ++t)
    p.emissions[t * K + p.gold[t]] += 20.f;
  std::vector<float> dEmissions(p.T * K, 0.f);
  EXPECT_EQ(p.crf.maxMarginLoss(p.emissions.data(), p.T, p.gold.data(), 0.2f,
                                dEmissions.data()),
            0.0);
  expectNoGradient(p, dEmissions);
  // The margin counts: a cost of 100 per wrong tag outweighs the lead.
  EXPECT_GT(p.crf.maxMarginLoss(p.emissions.data(), p.T, p.gold.data(), 100.f,
                                dEmissions.data()),
            0.0);
}

/// log Z and the NLL of the problem, by the forward algorithm in LibTorch.
std::pair<torch::Tensor, torch::Tensor>
torchNll(const torch::Tensor &e, const torch::Tensor &trans,
         const torch::Tensor &start, const torch::Tensor &end,
         const std::vector<int32_t> &gold) {
  int64_t T = e.size(0);
  torch::Tensor alpha = start + e[0];
  for (int64_t t = 1; t < T; ++t)
    alpha = torch::logsumexp(alpha.unsqueeze(1) + trans, 0) + e[t];
  torch::Tensor logZ = torch::logsumexp(alpha + end, 0);
  torch::Tensor gs = start[gold[0]] + end[gold[T - 1]];
  for (int64_t t = 0; t < T; ++t)
    gs = gs + e[t][gold[t]];
  for (int64_t t = 1; t < T; ++t)
    gs = gs + trans[gold[t - 1]][gold[t]];
  return {logZ, logZ - gs};
}

class CrfNllTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(CrfNllTest, MatchesTorchEnumerationAndDifferences) {
  const int64_t T = GetParam();
  Problem p(T, 100 + T);
  std::vector<float> dE(T * K, 0.f);
  double loss = p.crf.negativeLogLikelihood(p.emissions.data(), T,
                                            p.gold.data(), dE.data());
  double logZ = loss + p.crf.score(p.emissions.data(), T, p.gold.data());
  EXPECT_NEAR(logZ, enumerate(p, 0.f).logZ, 1e-9);
  EXPECT_NEAR(loss, enumerate(p, 0.f).logZ - bruteScore(p, p.gold), 1e-9);

  torch::Tensor e = toTorch(p.emissions, {T, K}, true);
  torch::Tensor trans = toTorch(p.trans(), {K, K}, true);
  torch::Tensor start = toTorch(p.start(), {K}, true);
  torch::Tensor end = toTorch(p.end(), {K}, true);
  auto [torchLogZ, nll] = torchNll(e, trans, start, end, p.gold);
  nll.backward();
  EXPECT_NEAR(logZ, torchLogZ.item<double>(), 1e-9);
  EXPECT_NEAR(loss, nll.item<double>(), 1e-9);
  expectClose(dE, e.grad(), "dEmissions", 1e-6);
  // With one step no transition is used: autograd leaves no gradient.
  torch::Tensor dTrans =
      trans.grad().defined() ? trans.grad() : torch::zeros({K, K});
  expectClose(p.crf.transitions().grad, dTrans, "dTransitions", 1e-6);
  expectClose(p.crf.start().grad, start.grad(), "dStart", 1e-6);
  expectClose(p.crf.end().grad, end.grad(), "dEnd", 1e-6);

  auto lossOnly = [&] {
    return p.crf.negativeLogLikelihood(p.emissions.data(), T, p.gold.data(),
                                       nullptr);
  };
  expectFiniteDifferences(lossOnly, p.emissions, dE, "dEmissions", T * K, 1e-2f,
                          1e-3);
  for (Param *param : p.store.all()) {
    std::vector<float> grad = param->grad;
    expectFiniteDifferences(lossOnly, param->value, grad, param->name,
                            int(grad.size()), 1e-2f, 1e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(Lengths, CrfNllTest, ::testing::Values(1, 2, 3, 6));

TEST(Crf, MaxMarginGradientMatchesDifferences) {
  const int64_t T = 6;
  const float cost = 0.2f, step = 1e-3f;
  int checked = 0;
  for (uint64_t seed = 1; checked < 3; ++seed) {
    ASSERT_LT(seed, 50u) << "too few seeds with a clear argmax";
    Problem p(T, seed);
    Enumeration e = enumerate(p, cost);
    // A step changes a path's score by at most T * step (a transition
    // feature counts up to T - 1 times, an emission once): with the runner-
    // up further behind than twice that, the argmax is the same at every
    // point the differences visit, and the loss linear there.
    if (e.bestScore - e.secondScore < 4 * T * step || e.best == p.gold)
      continue;
    ++checked;
    std::vector<float> dE(T * K, 0.f);
    auto loss = [&] {
      return p.crf.maxMarginLoss(p.emissions.data(), T, p.gold.data(), cost,
                                 nullptr);
    };
    EXPECT_GT(p.crf.maxMarginLoss(p.emissions.data(), T, p.gold.data(), cost,
                                  dE.data()),
              0.0);
    expectFiniteDifferences(loss, p.emissions, dE, "dEmissions", T * K, step,
                            1e-3);
    for (Param *param : p.store.all()) {
      std::vector<float> grad = param->grad;
      expectFiniteDifferences(loss, param->value, grad, param->name,
                              int(grad.size()), step, 1e-3);
    }
  }
}

/// A padded time-major batch: emissions [T, B, K], gold [T, B] holding an
/// invalid tag on padding, which must never be read.
struct Batch {
  int64_t T = 6, B = 4;
  std::vector<int32_t> lengths = {6, 3, 1, 5};
  std::vector<float> emissions;
  std::vector<int32_t> gold;

  explicit Batch(Rng &rng) : emissions(randomValues(T * B * K, rng, 2.f)) {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t b = 0; b < B; ++b)
        gold.push_back(t < lengths[b] ? int32_t(rng.below(K)) : 99);
  }
  /// Sentence b's rows of a [T, B, K] array, or of gold, as [lengths[b], K].
  template <typename V> V sentence(const V &rows, int64_t b, int64_t width) {
    V out;
    for (int64_t t = 0; t < lengths[b]; ++t)
      out.insert(out.end(), rows.begin() + (t * B + b) * width,
                 rows.begin() + (t * B + b + 1) * width);
    return out;
  }
};

std::vector<std::vector<float>> grads(ParamStore &store) {
  std::vector<std::vector<float>> result;
  for (Param *p : store.all())
    result.push_back(p->grad);
  return result;
}

TEST(Crf, BatchEqualsSumOfSentences) {
  ParamStore store;
  LinearChainCrf crf(store, "crf", K);
  Rng rng(5);
  for (Param *p : store.all())
    uniformInit(p->value, 1.f, rng);
  Batch batch(rng);
  for (CrfLoss kind : {CrfLoss::MaxMargin, CrfLoss::NegativeLogLikelihood}) {
    zeroGrads(store.all());
    std::vector<float> dE(batch.emissions.size(), 0.f);
    double total =
        crf.loss(batch.emissions.data(), batch.lengths.data(), batch.T, batch.B,
                 batch.gold.data(), kind, 0.2f, dE.data());
    std::vector<std::vector<float>> batchGrads = grads(store);
    zeroGrads(store.all());
    double sum = 0;
    for (int64_t b = 0; b < batch.B; ++b) {
      std::vector<float> e = batch.sentence(batch.emissions, b, K);
      std::vector<int32_t> g = batch.sentence(batch.gold, b, 1);
      std::vector<float> d(e.size(), 0.f);
      sum += kind == CrfLoss::MaxMargin
                 ? crf.maxMarginLoss(e.data(), batch.lengths[b], g.data(), 0.2f,
                                     d.data())
                 : crf.negativeLogLikelihood(e.data(), batch.lengths[b],
                                             g.data(), d.data());
      EXPECT_EQ(batch.sentence(dE, b, K), d) << "sentence " << b;
      for (int64_t t = batch.lengths[b]; t < batch.T; ++t)
        for (int64_t j = 0; j < K; ++j)
          EXPECT_EQ(dE[(t * batch.B + b) * K + j], 0.f) << "padding";
    }
    EXPECT_NEAR(total, sum, 1e-9);
    EXPECT_EQ(grads(store), batchGrads);
  }
  std::vector<std::vector<int32_t>> paths = crf.decode(
      batch.emissions.data(), batch.lengths.data(), batch.T, batch.B);
  ASSERT_EQ(int64_t(paths.size()), batch.B);
  for (int64_t b = 0; b < batch.B; ++b)
    EXPECT_EQ(paths[b],
              crf.viterbi(batch.sentence(batch.emissions, b, K).data(),
                          batch.lengths[b]));
}

TEST(Crf, GradientsAccumulate) {
  Problem p(4, 3);
  std::vector<float> once(p.T * K, 0.f), twice(p.T * K, 0.f);
  p.crf.negativeLogLikelihood(p.emissions.data(), p.T, p.gold.data(),
                              once.data());
  std::vector<float> startOnce = p.crf.start().grad;
  for (int i = 0; i < 2; ++i)
    p.crf.negativeLogLikelihood(p.emissions.data(), p.T, p.gold.data(),
                                twice.data());
  for (int64_t i = 0; i < p.T * K; ++i)
    EXPECT_FLOAT_EQ(twice[i], 2 * once[i]);
  for (int64_t j = 0; j < K; ++j)
    EXPECT_FLOAT_EQ(p.crf.start().grad[j], 3 * startOnce[j]);
}

TEST(Crf, FrozenParametersGetNoGradient) {
  Problem p(4, 3);
  p.crf.transitions().frozen = true;
  std::vector<float> dE(p.T * K, 0.f);
  p.crf.negativeLogLikelihood(p.emissions.data(), p.T, p.gold.data(),
                              dE.data());
  p.crf.maxMarginLoss(p.emissions.data(), p.T, p.gold.data(), 1.f, dE.data());
  for (float g : p.crf.transitions().grad)
    EXPECT_EQ(g, 0.f);
  EXPECT_NE(p.crf.start().grad, std::vector<float>(K, 0.f));
}

TEST(Crf, RejectsEmptySentencesAndBadTags) {
  EXPECT_THROW(Problem(1, 1).crf.viterbi(nullptr, 0), std::invalid_argument);
  ParamStore store;
  EXPECT_THROW(LinearChainCrf(store, "none", 0), std::invalid_argument);
  Problem p(3, 1);
  const float *e = p.emissions.data();
  float *d = nullptr;
  EXPECT_THROW(p.crf.maxMarginLoss(e, 0, p.gold.data(), 0.2f, d),
               std::invalid_argument);
  EXPECT_THROW(p.crf.negativeLogLikelihood(e, 0, p.gold.data(), d),
               std::invalid_argument);
  for (int32_t bad : {-1, int32_t(K)}) {
    std::vector<int32_t> gold = {0, bad, 1};
    EXPECT_THROW(p.crf.score(e, 3, gold.data()), std::invalid_argument);
    EXPECT_THROW(p.crf.maxMarginLoss(e, 3, gold.data(), 0.2f, d),
                 std::invalid_argument);
    EXPECT_THROW(p.crf.negativeLogLikelihood(e, 3, gold.data(), d),
                 std::invalid_argument);
  }
  // A bad length in a batch throws before any gradient is accumulated.
  std::vector<float> dE(3 * 2 * K, 0.f);
  std::vector<int32_t> gold(3 * 2, 0);
  for (int32_t bad : {0, 4}) {
    std::vector<int32_t> lengths = {3, bad};
    for (CrfLoss kind : {CrfLoss::MaxMargin, CrfLoss::NegativeLogLikelihood})
      EXPECT_THROW(p.crf.loss(dE.data(), lengths.data(), 3, 2, gold.data(),
                              kind, 1.f, dE.data()),
                   std::invalid_argument);
    EXPECT_THROW(p.crf.decode(dE.data(), lengths.data(), 3, 2),
                 std::invalid_argument);
  }
  expectNoGradient(p, dE);
}

} // namespace
