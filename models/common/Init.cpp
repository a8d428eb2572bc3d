//===- models/common/Init.cpp - How a model's params start ----------------===//

#include "models/common/Init.h"

#include "models/common/Data.h"

#include "cellrt/Runtime.h"

namespace models {

cellrt::InitScheme driverInitScheme(const std::string &init, float scale) {
  if (init == "paper")
    return cellrt::InitScheme::uniform(scale);
  if (init == "fan_in")
    return cellrt::InitScheme::fanIn();
  throw DataError("--init must be paper or fan_in, not '" + init + "'");
}

void initializeParams(const std::vector<Param *> &params, uint64_t seed,
                      const cellrt::InitScheme &fallback) {
  for (Param *p : params) {
    const cellrt::InitScheme &scheme = p->init.isNone() ? fallback : p->init;
    cellrt::Status status = cellrt::initArray(
        scheme, p->name, seed, cellrt::MutableArray{p->value.data(), p->shape});
    if (!status.ok())
      throw DataError("initialising " + p->name + ": " + status.message());
  }
}

} // namespace models
