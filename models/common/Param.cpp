//===- models/common/Param.cpp - Learned parameters and their store -------===//

#include "models/common/Param.h"

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

void zeroGrads(const std::vector<Param *> &params) {
  for (Param *p : params)
    p->grad.assign(p->value.size(), 0.f);
}

double gradientNorm(const std::vector<Param *> &params) {
  double norm2 = 0;
  for (const Param *p : params) {
    // Per-parameter float partials (vectorised), summed in double.
#pragma clang fp reassociate(on)
    float part = 0;
    for (float g : p->grad)
      part += g * g;
    norm2 += part;
  }
  return std::sqrt(norm2);
}

} // namespace models
