//===- models/common/Dropout.cpp - Inverted dropout -----------------------===//

#include "models/common/Dropout.h"

#include <cassert>

namespace models {

void Dropout::forward(float *x, int64_t n, Rng *rng,
                      std::vector<float> &mask) const {
  if (!rng || p <= 0.f) {
    mask.clear();
    return;
  }
  dropoutForward(x, n, p, *rng, mask);
}

void Dropout::backward(float *dx, int64_t n,
                       const std::vector<float> &mask) const {
  if (mask.empty())
    return;
  assert(int64_t(mask.size()) == n && "the mask of another forward");
  for (int64_t i = 0; i < n; ++i)
    dx[i] *= mask[i];
}

} // namespace models
