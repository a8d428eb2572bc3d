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

} // namespace layercheck
