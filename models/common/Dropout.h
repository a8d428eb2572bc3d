//===- models/common/Dropout.h - Inverted dropout ---------------*- C++ -*-===//
//
// Training zeroes each value with probability p and scales the rest by
// 1/(1-p), so evaluation is the identity. The mask is the caller's, for
// backward.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_DROPOUT_H
#define CELLC_MODELS_COMMON_DROPOUT_H

#include "models/common/Math.h"

#include <vector>

namespace models {

class Dropout {
public:
  explicit Dropout(float p = 0.f) : p(p) {}
  float rate() const { return p; }

  /// In place over x[0, n); rng == nullptr (evaluation) or p == 0 leaves x
  /// alone and clears the mask.
  void forward(float *x, int64_t n, Rng *rng, std::vector<float> &mask) const;
  /// dx *= mask (nothing with an empty mask).
  void backward(float *dx, int64_t n, const std::vector<float> &mask) const;

private:
  float p;
};

} // namespace models

#endif
