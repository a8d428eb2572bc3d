//===- models/common/Optimizers.cpp - Adam, Adadelta, SGD -----------------===//

#include "models/common/Optimizers.h"

#include "cellrt/Runtime.h"

#include <cmath>

namespace models {

double Optimizer::update(const std::vector<Param *> &params, double norm) {
  float scale = 1.f;
  if (clipNorm > 0 && norm > clipNorm)
    scale = float(clipNorm / norm);
  ++step;
  beginStep();
  for (Param *p : params) {
    if (p->frozen)
      continue;
    if (p->m.size() != p->value.size()) {
      p->m.assign(p->value.size(), 0.f);
      p->v.assign(p->value.size(), 0.f);
    }
    apply(*p, scale);
  }
  return norm;
}

/// Runs body(i) for every value of the parameter, split over the runtime's
/// threads (large embedding tables dominate an update otherwise).
template <typename Body> static void forEachValue(Param &param, Body body) {
  int64_t n = param.size();
  cellrt::parallelFor(n, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      body(i);
  });
}

void Adam::beginStep() {
  correction1 = 1.f - float(std::pow(double(beta1), double(step)));
  correction2 = 1.f - float(std::pow(double(beta2), double(step)));
}

void Adam::apply(Param &param, float gradScale) {
  float *value = param.value.data(), *m = param.m.data(), *v = param.v.data();
  const float *grad = param.grad.data();
  forEachValue(param, [&](int64_t i) {
    float g = grad[i] * gradScale;
    m[i] = beta1 * m[i] + (1 - beta1) * g;
    v[i] = beta2 * v[i] + (1 - beta2) * g * g;
    float mHat = m[i] / correction1, vHat = v[i] / correction2;
    value[i] -= lr * mHat / (std::sqrt(vHat) + eps);
  });
}

void Adadelta::apply(Param &param, float gradScale) {
  // m: running mean of squared gradients; v: of squared updates.
  float *value = param.value.data(), *g2 = param.m.data(),
        *dx2 = param.v.data();
  const float *grad = param.grad.data();
  forEachValue(param, [&](int64_t i) {
    float g = grad[i] * gradScale;
    g2[i] = rho * g2[i] + (1 - rho) * g * g;
    float dx = -std::sqrt(dx2[i] + eps) / std::sqrt(g2[i] + eps) * g;
    dx2[i] = rho * dx2[i] + (1 - rho) * dx * dx;
    value[i] += lr * dx;
  });
}

void Sgd::apply(Param &param, float gradScale) {
  float *value = param.value.data();
  const float *grad = param.grad.data();
  forEachValue(param, [&](int64_t i) { value[i] -= lr * gradScale * grad[i]; });
}

std::unique_ptr<Optimizer> makeOptimizer(const std::string &name) {
  if (name == "adam")
    return std::make_unique<Adam>();
  if (name == "adadelta")
    return std::make_unique<Adadelta>();
  if (name == "sgd")
    return std::make_unique<Sgd>();
  return nullptr;
}

} // namespace models
