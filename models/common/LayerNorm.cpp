//===- models/common/LayerNorm.cpp - Layer normalisation ------------------===//

#include "models/common/LayerNorm.h"

#include <cmath>

namespace models {

LayerNorm::LayerNorm(ParamStore &store, const std::string &name,
                     int64_t width, float eps)
    : n(width), eps(eps), g(&store.add(name + ".gain", {width})),
      b(&store.add(name + ".bias", {width})) {
  g->value.assign(width, 1.f);
  // The identity, however the model is initialised.
  g->init = cellrt::InitScheme::constant(1);
  b->init = cellrt::InitScheme::constant(0);
}

void LayerNorm::forward(const float *X, int64_t rows, float *Y,
                        Stats &stats) const {
  stats.mean.resize(rows);
  stats.invStd.resize(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = X + r * n;
    // Two passes in double: rows of equal large values must not lose the
    // variance to cancellation.
    double sum = 0, squares = 0;
    for (int64_t j = 0; j < n; ++j)
      sum += x[j];
    double mean = sum / double(n);
    for (int64_t j = 0; j < n; ++j)
      squares += (x[j] - mean) * (x[j] - mean);
    float invStd = float(1.0 / std::sqrt(squares / double(n) + eps));
    stats.mean[r] = float(mean);
    stats.invStd[r] = invStd;
    for (int64_t j = 0; j < n; ++j)
      Y[r * n + j] =
          g->value[j] * (x[j] - float(mean)) * invStd + b->value[j];
  }
}

void LayerNorm::backward(const float *X, int64_t rows, const Stats &stats,
                         const float *dY, float *dX) const {
  // With xhat = (x - mean) * invStd and dxhat = dY * gain:
  // dX = invStd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
  std::vector<float> xhat(n), dxhat(n);
  for (int64_t r = 0; r < rows; ++r) {
    const float *x = X + r * n, *dy = dY + r * n;
    double meanD = 0, meanDX = 0;
    for (int64_t j = 0; j < n; ++j) {
      xhat[j] = (x[j] - stats.mean[r]) * stats.invStd[r];
      dxhat[j] = dy[j] * g->value[j];
      meanD += dxhat[j];
      meanDX += double(dxhat[j]) * xhat[j];
      if (!g->frozen)
        g->grad[j] += dy[j] * xhat[j];
      if (!b->frozen)
        b->grad[j] += dy[j];
    }
    meanD /= double(n);
    meanDX /= double(n);
    for (int64_t j = 0; j < n; ++j)
      dX[r * n + j] += stats.invStd[r] *
                       float(dxhat[j] - meanD - xhat[j] * meanDX);
  }
}

} // namespace models
