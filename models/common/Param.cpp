//===- models/common/Param.cpp - Learned parameters and their store -------===//

#include "models/common/Param.h"

#include "cellrt/Runtime.h"

#include <cmath>
#include <stdexcept>

namespace models {

Param &ParamStore::add(const std::string &name, std::vector<int64_t> shape) {
  if (find(name))
    throw std::invalid_argument("two parameters are named " + name);
  Param param;
  param.name = name;
  param.shape = std::move(shape);
  int64_t count = 1;
  for (int64_t d : param.shape)
    count *= d;
  param.value.assign(count, 0.f);
  param.grad.assign(count, 0.f);
  params.push_back(std::move(param));
  return params.back();
}

std::vector<Param *> ParamStore::all() {
  std::vector<Param *> result;
  for (Param &param : params)
    result.push_back(&param);
  return result;
}

std::vector<Param *> ParamStore::trainable() {
  std::vector<Param *> result;
  for (Param &param : params)
    if (!param.frozen)
      result.push_back(&param);
  return result;
}

Param *ParamStore::find(const std::string &name) {
  for (Param &param : params)
    if (param.name == name)
      return &param;
  return nullptr;
}

int64_t ParamStore::count() const {
  int64_t total = 0;
  for (const Param &param : params)
    total += param.size();
  return total;
}

int64_t ParamStore::trainableCount() const {
  int64_t total = 0;
  for (const Param &param : params)
    total += param.frozen ? 0 : param.size();
  return total;
}

/// Runs body(i) for each params[i], the params split over cellrt's threads
/// by their sizes' sum (at 2 threads a serial pass over every gradient
/// left the second thread waiting).
template <typename Body>
static void forEachParam(const std::vector<Param *> &params, Body body) {
  int64_t work = 0;
  for (const Param *p : params)
    work += int64_t(p->value.size());
  cellrt::parallelFor(int64_t(params.size()), work,
                      [&](int64_t begin, int64_t end) {
                        for (int64_t i = begin; i < end; ++i)
                          body(i);
                      });
}

void zeroGrads(const std::vector<Param *> &params) {
  forEachParam(params, [&](int64_t i) {
    Param *p = params[i];
    p->grad.assign(p->value.size(), 0.f);
  });
}

/// sum g^2 in float partials (vectorised): the same loop, so the same bits,
/// at every thread count.
static float squaredSum(const std::vector<float> &values) {
#pragma clang fp reassociate(on)
  float part = 0;
  for (float g : values)
    part += g * g;
  return part;
}

double gradientNorm(const std::vector<Param *> &params) {
  std::vector<float> parts(params.size());
  forEachParam(params,
               [&](int64_t i) { parts[i] = squaredSum(params[i]->grad); });
  // Summed in double, in the params' order.
  double norm2 = 0;
  for (float part : parts)
    norm2 += part;
  return std::sqrt(norm2);
}

} // namespace models
