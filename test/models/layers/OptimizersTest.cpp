//===- OptimizersTest.cpp - Adam, Adadelta, SGD against torch::optim ------===//
//
// Three updates from the same parameters and gradients as torch::optim (in
// float64), with the gradients clipped by clip_grad_norm_ first.
//
//===----------------------------------------------------------------------===//

#include "models/common/Optimizers.h"

#include "LayerCheck.h"

#include <gtest/gtest.h>

using namespace models;
using namespace layercheck;

namespace {

/// LibTorch's C++ API has no Adadelta: this is PyTorch's torch.optim.Adadelta
/// (Zeiler 2012, Algorithm 1) step, written with tensor operations.
class TorchAdadelta : public torch::optim::Optimizer {
public:
  TorchAdadelta(std::vector<torch::Tensor> params, double lr)
      : torch::optim::Optimizer(
            params, std::make_unique<torch::optim::SGDOptions>(lr)),
        lr(lr) {
    for (const torch::Tensor &p : params) {
      squareAvg.push_back(torch::zeros_like(p));
      accDelta.push_back(torch::zeros_like(p));
    }
  }
  torch::Tensor step(LossClosure) override {
    torch::NoGradGuard noGrad;
    const double rho = 0.95, eps = 1e-6;
    auto &params = param_groups()[0].params();
    for (size_t i = 0; i < params.size(); ++i) {
      torch::Tensor g = params[i].grad();
      squareAvg[i].mul_(rho).add_((1 - rho) * g * g);
      torch::Tensor delta = (accDelta[i] + eps).sqrt() /
                            (squareAvg[i] + eps).sqrt() * g;
      accDelta[i].mul_(rho).add_((1 - rho) * delta * delta);
      params[i].sub_(lr * delta);
    }
    return {};
  }

private:
  double lr;
  std::vector<torch::Tensor> squareAvg, accDelta;
};

std::unique_ptr<torch::optim::Optimizer>
torchOptimizer(const std::string &name, std::vector<torch::Tensor> params,
               double lr) {
  if (name == "adam")
    return std::make_unique<torch::optim::Adam>(
        params, torch::optim::AdamOptions(lr).betas({0.9, 0.999}).eps(1e-8));
  if (name == "adadelta")
    return std::make_unique<TorchAdadelta>(params, lr);
  return std::make_unique<torch::optim::SGD>(params,
                                             torch::optim::SGDOptions(lr));
}

struct OptimizerCase {
  std::string name;
  float clip;
};

class OptimizerTest : public ::testing::TestWithParam<OptimizerCase> {};

TEST_P(OptimizerTest, MatchesTorchOptim) {
  const OptimizerCase c = GetParam();
  ParamStore store;
  Param &a = store.add("a", {3, 4});
  Param &b = store.add("b", {5});
  Param &frozen = store.add("frozen", {2});
  frozen.frozen = true;
  Rng rng(17);
  for (Param *p : store.all())
    uniformInit(p->value, 1.f, rng);
  std::vector<float> frozenBefore = frozen.value;

  std::unique_ptr<Optimizer> ours = makeOptimizer(c.name);
  ASSERT_TRUE(ours);
  ours->clipNorm = c.clip;
  torch::Tensor ta = toTorch(a.value, {3, 4}, true);
  torch::Tensor tb = toTorch(b.value, {5}, true);
  auto theirs = torchOptimizer(c.name, {ta, tb}, ours->lr);

  for (int step = 0; step < 3; ++step) {
    for (Param *p : store.all())
      p->grad = randomValues(p->size(), rng, 2.f);
    theirs->zero_grad();
    ta.mutable_grad() = toTorch(a.grad, {3, 4});
    tb.mutable_grad() = toTorch(b.grad, {5});
    double expectedNorm =
        torch::cat({ta.grad().reshape(-1), tb.grad().reshape(-1)})
            .norm()
            .item<double>();
    if (c.clip > 0)
      torch::nn::utils::clip_grad_norm_(std::vector<torch::Tensor>{ta, tb},
                                        c.clip);
    theirs->step();
    double norm = ours->update(store.trainable());
    EXPECT_NEAR(norm, expectedNorm, 1e-5 * expectedNorm);
    expectClose(a.value, ta, c.name + " a after step " + std::to_string(step),
                1e-5);
    expectClose(b.value, tb, c.name + " b after step " + std::to_string(step),
                1e-5);
  }
  EXPECT_EQ(ours->step, 3);
  EXPECT_EQ(frozen.value, frozenBefore);
}

INSTANTIATE_TEST_SUITE_P(
    All, OptimizerTest,
    ::testing::Values(OptimizerCase{"adam", 0}, OptimizerCase{"adam", 1},
                      OptimizerCase{"adadelta", 0},
                      OptimizerCase{"adadelta", 1.5f}, OptimizerCase{"sgd", 0},
                      OptimizerCase{"sgd", 1}),
    [](const auto &info) {
      return info.param.name + (info.param.clip > 0 ? "Clipped" : "");
    });

TEST(Optimizers, UnknownNameIsNull) { EXPECT_EQ(makeOptimizer("rmsprop"), nullptr); }

TEST(Optimizers, FrozenParamsAreSkippedEvenWhenPassed) {
  ParamStore store;
  Param &p = store.add("p", {2});
  p.value = {1, 1};
  p.grad = {1, 1};
  p.frozen = true;
  Sgd sgd;
  sgd.update(store.all());
  EXPECT_EQ(p.value, (std::vector<float>{1, 1}));
}

} // namespace
