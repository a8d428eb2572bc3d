//===- ModelGradients.h - Whole models against central differences --------===//
//
// For each parameter, central differences of the model's mean loss (float32)
// at the coordinates with the largest accumulated gradients and two random
// ones; the worst relative error and where it is. Header-only: shared by
// the nmt and nli tests.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_MODELS_MODELGRADIENTS_H
#define CELLC_TEST_MODELS_MODELGRADIENTS_H

#include "models/common/Math.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

namespace modeltest {

struct Worst {
  double error = 0;
  std::string where;
};

/// `params` hold the gradients of `meanLoss` (accumulated by the caller).
inline Worst worstDifference(const std::vector<models::Param *> &params,
                             const std::function<double()> &meanLoss) {
  Worst worst;
  const float h = 1e-2f;
  models::Rng pick(5);
  for (models::Param *p : params) {
    std::vector<int64_t> order(p->size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return std::fabs(p->grad[a]) > std::fabs(p->grad[b]);
    });
    std::vector<int64_t> coords(order.begin(),
                                order.begin() + std::min<int64_t>(3, p->size()));
    for (int k = 0; k < 2; ++k)
      coords.push_back(int64_t(pick.below(uint64_t(p->size()))));
    for (int64_t i : coords) {
      float saved = p->value[i];
      p->value[i] = saved + h;
      double up = meanLoss();
      p->value[i] = saved - h;
      double down = meanLoss();
      p->value[i] = saved;
      double numeric = (up - down) / (2 * h);
      double analytic = p->grad[i];
      double error = std::fabs(numeric - analytic) /
                     std::max({std::fabs(numeric), std::fabs(analytic), 1e-2});
      if (error > worst.error) {
        worst.error = error;
        worst.where = p->name + "[" + std::to_string(i) + "] analytic " +
                      std::to_string(analytic) + " numeric " +
                      std::to_string(numeric);
      }
    }
  }
  return worst;
}

} // namespace modeltest

#endif
