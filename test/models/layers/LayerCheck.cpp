//===- LayerCheck.cpp - Checking a layer against LibTorch and differences -===//

#include "LayerCheck.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace layercheck {

std::vector<float> randomValues(int64_t n, models::Rng &rng, float scale) {
  std::vector<float> values(n);
  models::uniformInit(values, scale, rng);
  return values;
}

torch::Tensor toTorch(const float *values, const std::vector<int64_t> &shape,
                      bool requiresGrad) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  torch::Tensor tensor =
      torch::from_blob(const_cast<float *>(values), {count}, torch::kFloat32)
          .to(torch::kFloat64)
          .reshape(shape)
          .clone();
  return tensor.set_requires_grad(requiresGrad);
}

torch::Tensor toTorch(const std::vector<float> &values,
                      const std::vector<int64_t> &shape, bool requiresGrad) {
  return toTorch(values.data(), shape, requiresGrad);
}

double relativeError(const float *ours, const torch::Tensor &reference) {
  torch::Tensor flat = reference.detach().to(torch::kFloat64).contiguous()
                           .reshape({-1});
  const double *ref = flat.data_ptr<double>();
  double worst = 0;
  for (int64_t i = 0; i < flat.numel(); ++i) {
    double error = std::fabs(double(ours[i]) - ref[i]) /
                   std::max(1.0, std::fabs(ref[i]));
    if (!(error <= worst)) // NaN counts as the worst
      worst = std::isnan(error) ? INFINITY : error;
  }
  return worst;
}

double relativeError(const std::vector<float> &ours,
                     const torch::Tensor &reference) {
  EXPECT_EQ(int64_t(ours.size()), reference.numel());
  if (int64_t(ours.size()) != reference.numel())
    return INFINITY;
  return relativeError(ours.data(), reference);
}

void expectClose(const std::vector<float> &ours,
                 const torch::Tensor &reference, const std::string &what,
                 double tolerance) {
  double error = relativeError(ours, reference);
  EXPECT_LE(error, tolerance) << what << ": relative error " << error;
}

double weightedSum(const std::vector<float> &Y, const std::vector<float> &G) {
  double sum = 0;
  for (size_t i = 0; i < Y.size(); ++i)
    sum += double(Y[i]) * double(G[i]);
  return sum;
}

void expectFiniteDifferences(const std::function<double()> &loss,
                             std::vector<float> &values,
                             const std::vector<float> &gradient,
                             const std::string &what, int points, float step,
                             double tolerance) {
  ASSERT_EQ(values.size(), gradient.size()) << what;
  std::vector<int64_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return std::fabs(gradient[a]) > std::fabs(gradient[b]);
  });
  std::vector<int64_t> coords(
      order.begin(), order.begin() + std::min<int64_t>(points / 2 + 1,
                                                       int64_t(order.size())));
  models::Rng pick(values.size() * 7 + 3);
  for (int k = int(coords.size()); k < points; ++k)
    coords.push_back(int64_t(pick.below(values.size())));
  for (int64_t i : coords) {
    float saved = values[i];
    values[i] = saved + step;
    double up = loss();
    values[i] = saved - step;
    double down = loss();
    values[i] = saved;
    double numeric = (up - down) / (2.0 * step);
    double error = std::fabs(numeric - gradient[i]) /
                   std::max(1.0, std::fabs(numeric));
    EXPECT_LE(error, tolerance)
        << what << "[" << i << "]: analytic " << gradient[i]
        << ", central difference " << numeric;
  }
}

void expectParamDifferences(const std::function<double()> &loss,
                            models::ParamStore &store, int points) {
  // The loss runs forward only, so the grads stay as backward left them.
  for (models::Param *param : store.all())
    expectFiniteDifferences(loss, param->value, param->grad, param->name,
                            points);
}

void forEachPadded(const std::vector<int32_t> &lengths, int64_t T,
                   int64_t width, const std::function<void(int64_t)> &visit) {
  int64_t B = int64_t(lengths.size());
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; t >= lengths[b] && j < width; ++j)
        visit((t * B + b) * width + j);
}

void fillPadding(std::vector<float> &seq, const std::vector<int32_t> &lengths,
                 int64_t T, int64_t width) {
  forEachPadded(lengths, T, width,
                [&](int64_t i) { seq[i] = 30.f - float(i % 7); });
}

void expectZeroPadding(const std::vector<float> &grad,
                       const std::vector<int32_t> &lengths, int64_t T,
                       int64_t width, const std::string &what) {
  forEachPadded(lengths, T, width, [&](int64_t i) {
    EXPECT_EQ(grad[i], 0.f) << what << "[" << i << "] is padding";
  });
}

} // namespace layercheck
