//===- ParamChecks.h - Checks over a model's parameters ---------*- C++ -*-===//
//
// Shared by the drivers' tests: the whole-model gradient check against
// central differences, and the equality of two runs' parameters.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_MODELS_PARAMCHECKS_H
#define CELLC_TEST_MODELS_PARAMCHECKS_H

#include "models/common/Math.h"
#include "models/common/Param.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace modeltest {

using models::Param;
using models::Rng;

struct Worst {
  double error = 0;
  std::string where;
};

/// Compares each parameter's analytic gradient (already in Param::grad) with
/// central differences of `meanLoss` at step h, on up to five coordinates:
/// the three largest analytic gradients and two drawn at random. The error
/// is relative, with gradients below 1e-2 compared absolutely.
inline Worst compareWithFiniteDifferences(
    const std::vector<Param *> &params,
    const std::function<double()> &meanLoss, float h) {
  Worst worst;
  Rng pick(5);
  for (Param *p : params) {
    std::vector<int64_t> order(p->size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return std::fabs(p->grad[a]) > std::fabs(p->grad[b]);
    });
    order.resize(std::min<int64_t>(3, p->size()));
    for (int k = 0; k < 2; ++k)
      order.push_back(int64_t(pick.below(uint64_t(p->size()))));
    for (int64_t i : order) {
      float saved = p->value[i];
      p->value[i] = saved + h;
      double up = meanLoss();
      p->value[i] = saved - h;
      double down = meanLoss();
      p->value[i] = saved;
      double numeric = (up - down) / (2 * h), analytic = p->grad[i];
      double error = std::fabs(numeric - analytic) /
                     std::max({std::fabs(numeric), std::fabs(analytic), 1e-2});
      if (error > worst.error)
        worst = {error, p->name + "[" + std::to_string(i) + "] analytic " +
                            std::to_string(analytic) + " numeric " +
                            std::to_string(numeric)};
    }
  }
  return worst;
}

/// Values and optimiser moments equal, parameter by parameter.
inline void expectSameParams(const std::vector<Param *> &a,
                             const std::vector<Param *> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]->value, b[i]->value) << a[i]->name;
    EXPECT_EQ(a[i]->m, b[i]->m) << a[i]->name;
    EXPECT_EQ(a[i]->v, b[i]->v) << a[i]->name;
  }
}

} // namespace modeltest

#endif
