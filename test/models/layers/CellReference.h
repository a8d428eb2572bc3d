//===- CellReference.h - Compiled cells and their LibTorch twins -*- C++ -*-===//
//
// Helpers of the tests of the layers that run compiled cells: a cell JIT-
// compiled from source, the reference loop over padded sequences, and the
// params as float64 leaves.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_MODELS_LAYERS_CELLREFERENCE_H
#define CELLC_TEST_MODELS_LAYERS_CELLREFERENCE_H

#include "LayerCheck.h"
#include "jit/Jit.h"
#include "models/common/Param.h"

#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace layercheck {

/// A cellrt::Cell compiled from source, with the code kept alive.
struct JitCell {
  explicit JitCell(const std::string &source) {
    cellc::jit::CompileOptions options;
    options.cacheDir = "";
    auto result = cellc::jit::compileSource(source, "test.cell", options);
    if (!result)
      throw std::runtime_error(result.error());
    compiled = std::make_unique<cellc::jit::CompiledCell>(std::move(*result));
    auto loaded = cellrt::Cell::load(compiled->image());
    if (!loaded)
      throw std::runtime_error(loaded.error());
    cell = std::make_unique<cellrt::Cell>(std::move(*loaded));
  }
  std::unique_ptr<cellc::jit::CompiledCell> compiled;
  std::unique_ptr<cellrt::Cell> cell;
};

using Step = std::function<torch::Tensor(const std::vector<torch::Tensor> &,
                                         const torch::Tensor &)>;

/// The cell over each sequence's valid steps (backwards when reverse):
/// outputs [T, B, H] (zero at padding) and final states [B, H].
inline std::pair<torch::Tensor, torch::Tensor>
reference(const Step &step, const std::vector<torch::Tensor> &inputs,
          const std::vector<int32_t> &lengths, bool reverse,
          torch::Tensor h0) {
  int64_t T = inputs[0].size(0), B = inputs[0].size(1), H = h0.size(1);
  std::vector<torch::Tensor> rows(T * B), finals;
  for (int64_t b = 0; b < B; ++b) {
    torch::Tensor h = h0[b];
    for (int64_t i = 0; i < lengths[b]; ++i) {
      int64_t t = reverse ? lengths[b] - 1 - i : i;
      std::vector<torch::Tensor> xs;
      for (const torch::Tensor &input : inputs)
        xs.push_back(input[t][b]);
      h = step(xs, h);
      rows[t * B + b] = h;
    }
    for (int64_t t = lengths[b]; t < T; ++t)
      rows[t * B + b] = torch::zeros({H}, torch::kFloat64);
    finals.push_back(h);
  }
  return {torch::stack(rows).reshape({T, B, H}), torch::stack(finals)};
}

/// Every param of `store` as a float64 leaf tensor, by name.
inline std::map<std::string, torch::Tensor>
torchParams(models::ParamStore &store) {
  std::map<std::string, torch::Tensor> params;
  for (models::Param *p : store.all())
    params[p->name] = toTorch(p->value, p->shape, true);
  return params;
}

/// Every param's gradient against its leaf's after backward().
inline void expectParamGradients(models::ParamStore &store,
                                 std::map<std::string, torch::Tensor> &params) {
  for (models::Param *p : store.all())
    expectClose(p->grad, params[p->name].grad(), "d" + p->name);
}

} // namespace layercheck

#endif
