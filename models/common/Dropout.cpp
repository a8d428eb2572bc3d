//===- models/common/Dropout.cpp - Inverted dropout -----------------------===//

#include "models/common/Dropout.h"

#include "cellrt/Runtime.h"

#include <cassert>

namespace models {

void Dropout::forward(float *x, int64_t n, Rng *rng,
                      std::vector<float> &mask) const {
  if (!rng || p <= 0.f) {
    mask.clear();
    return;
  }
  mask.resize(n);
  float keep = 1.f / (1.f - p);
  for (int64_t i = 0; i < n; ++i) {
    mask[i] = rng->uniform() < p ? 0.f : keep;
    x[i] *= mask[i];
  }
}

void Dropout::backward(float *dx, int64_t n,
                       const std::vector<float> &mask) const {
  if (mask.empty())
    return;
  assert(int64_t(mask.size()) == n && "the mask of another forward");
  const float *keep = mask.data();
  cellrt::parallelFor(n, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      dx[i] *= keep[i];
  });
}

} // namespace models
