//===- models/common/LayerNorm.h - Layer normalisation ----------*- C++ -*-===//
//
// Ba et al. (2016): y = gain * (x - mean) / sqrt(var + eps) + bias over each
// row of X [rows, width] (the population variance, as LibTorch's
// layer_norm).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_LAYERNORM_H
#define CELLC_MODELS_COMMON_LAYERNORM_H

#include "models/common/Param.h"

#include <string>
#include <vector>

namespace models {

class LayerNorm {
public:
  /// What backward needs besides X: each row's mean and 1/sqrt(var + eps).
  struct Stats {
    std::vector<float> mean, invStd;
  };

  /// Registers `NAME.gain` (ones) and `NAME.bias` (zeros), both [width].
  LayerNorm(ParamStore &store, const std::string &name, int64_t width,
            float eps = 1e-5f);

  int64_t width() const { return n; }
  Param &gain() const { return *g; }
  Param &bias() const { return *b; }

  void forward(const float *X, int64_t rows, float *Y, Stats &stats) const;
  /// Accumulates gain/bias gradients and dX += dL/dX.
  void backward(const float *X, int64_t rows, const Stats &stats,
                const float *dY, float *dX) const;

private:
  int64_t n;
  float eps;
  Param *g, *b;
};

} // namespace models

#endif
