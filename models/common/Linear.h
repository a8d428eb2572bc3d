//===- models/common/Linear.h - A fully connected layer ---------*- C++ -*-===//
//
// Y = X W^T + b over rows of X [rows, in]: W is [out, in], b is [out]. Like
// every layer of the library it holds only its parameters; what backward
// needs (here X) is the caller's, so one layer can be applied at many time
// steps or shared between parts of a model.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_LINEAR_H
#define CELLC_MODELS_COMMON_LINEAR_H

#include "models/common/Param.h"

#include <string>

namespace models {

class Linear {
public:
  /// Registers `NAME.W` [out, in] and, with a bias, `NAME.b` [out].
  Linear(ParamStore &store, const std::string &name, int64_t in, int64_t out,
         bool bias = true);
  /// A layer whose weight is another layer's [out, in] param (tied, as an
  /// output layer to the target embeddings): only `NAME.b` is registered,
  /// and W's gradient adds to the owner's.
  Linear(ParamStore &store, const std::string &name, Param &tiedWeight,
         bool bias = true);

  int64_t inputWidth() const { return in; }
  int64_t outputWidth() const { return out; }
  Param &weight() const { return *W; }
  /// nullptr without a bias.
  Param *bias() const { return b; }

  /// Y[rows, out] = X W^T + b; with `accumulate`, Y += X W^T + b.
  void forward(const float *X, int64_t rows, float *Y,
               bool accumulate = false) const;
  /// Given dY: W.grad += dY^T X, b.grad += column sums of dY, and when dX is
  /// given dX += dY W (or dX = dY W without accumulateDx).
  void backward(const float *X, int64_t rows, const float *dY, float *dX,
                bool accumulateDx = true) const;

  /// forward() leaving the bias to Y's consumer, which adds bias()'s
  /// values in its own pass over Y (Losses.h's LogitBias): the output
  /// layer's logits are the largest array of an NMT update.
  void forwardWithoutBias(const float *X, int64_t rows, float *Y) const;
  /// backward() without the bias gradient, which that consumer added up.
  /// In bf16, `roundedDY` (may be null) is dY already rounded
  /// (cellrt::roundToBf16, dense): both products read it instead of
  /// rounding dY (an NMT loss writes its gradient in both precisions).
  void backwardWithoutBias(const float *X, int64_t rows, const float *dY,
                           float *dX, bool accumulateDx = true,
                           const uint16_t *roundedDY = nullptr) const;

private:
  int64_t in, out;
  Param *W;
  Param *b = nullptr;
};

} // namespace models

#endif
