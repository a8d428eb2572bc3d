//===- models/common/CellLayer.h - A compiled cell as a layer ---*- C++ -*-===//
//
// Binds a cellrt::Cell (compiled by cellc, AOT or JIT) to concrete sizes:
// the cell's single input gets `inputSize`, every state `stateSize`, and the
// cell's params become model Params named `prefix.NAME`.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_CELLLAYER_H
#define CELLC_MODELS_COMMON_CELLLAYER_H

#include "models/common/Math.h"
#include "models/common/Param.h"

#include "cellrt/Runtime.h"

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace models {

class CellLayer {
public:
  /// Throws DataError when the cell's dims cannot be bound this way.
  CellLayer(const cellrt::Cell &cell, const std::string &prefix,
            int64_t inputSize, int64_t stateSize, ParamStore &store);

  const cellrt::Cell &cell() const { return *impl; }
  int64_t inputWidth() const { return input; }
  int64_t outputWidth() const { return output; }
  const std::vector<int64_t> &stateWidths() const { return states; }
  std::map<std::string, cellrt::ConstArray> paramArrays() const;
  std::map<std::string, cellrt::MutableArray> gradArrays() const;
  const std::vector<Param *> &getParams() const { return params; }

private:
  const cellrt::Cell *impl;
  int64_t input = 0, output = 0;
  std::vector<int64_t> states;
  std::vector<std::string> names;
  std::vector<Param *> params;
};

/// A cellrt call failed (bad shapes, lengths, sizes): the message names the
/// call and says why.
struct CellRuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws CellRuntimeError with the message when a runtime call failed.
void check(const cellrt::Status &status, const char *what);

} // namespace models

#endif
