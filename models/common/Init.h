//===- models/common/Init.h - How a model's params start --------*- C++ -*-===//
//
// Every driver initialises its model here, from its --seed: a param whose
// cell declares an initialiser (`param bf: [H] = 1`) or that a layer fixes
// (a layer norm starts as the identity) starts as that says; every other
// param as the driver's --init says:
//   paper   U(-s, s), s = --init-scale (0.08: the ATR paper, A.1)
//   fan_in  U(-1/sqrt(C), 1/sqrt(C)) for an [R, C] matrix, 1/sqrt(D) for a
//           [D] vector: PyTorch's nn.GRU/LSTM/Linear default, which
//           shrinks as the layers widen
// Each param is drawn by cellrt::initArray from the seed and its own name,
// so its values do not depend on the other params or their order.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_INIT_H
#define CELLC_MODELS_COMMON_INIT_H

#include "models/common/Param.h"

#include <string>

namespace models {

/// --init's choices, for --help and checks.
inline const char *const kInitChoices[] = {"paper", "fan_in"};

/// The scheme --init `init` gives a param without one of its own.
/// DataError for another name.
cellrt::InitScheme driverInitScheme(const std::string &init, float scale);

/// Initialises every param of `params` from `seed`: by its own scheme
/// (Param::init), else by `fallback`.
void initializeParams(const std::vector<Param *> &params, uint64_t seed,
                      const cellrt::InitScheme &fallback);

} // namespace models

#endif
