//===- models/common/LinearSum.h - Linear over several inputs --*- C++ -*-===//
//
// Y = X_1 W_1^T + ... + X_n W_n^T + b: a linear layer over the
// concatenation [X_1 ; ... ; X_n] without building it, each input with a
// weight of its own name. The NMT readout is one:
//   t = Ws s + Wy y + Wc c + b   (`readout.Ws`, `readout.Wy`, `readout.Wc`).
// Like Linear it holds only its parameters; the inputs are the caller's.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_LINEARSUM_H
#define CELLC_MODELS_COMMON_LINEARSUM_H

#include "models/common/Param.h"

#include <string>
#include <utility>
#include <vector>

namespace models {

class LinearSum {
public:
  /// One input: the weight's name (after `NAME.`) and the input's width.
  struct Input {
    std::string name;
    int64_t width;
  };

  /// Registers `NAME.<input name>` [out, width] for each input, in order,
  /// then `NAME.b` [out].
  LinearSum(ParamStore &store, const std::string &name,
            const std::vector<Input> &inputs, int64_t out);

  size_t numInputs() const { return weights.size(); }
  int64_t inputWidth(size_t k) const { return weights[k]->shape[1]; }
  int64_t outputWidth() const { return out; }
  Param &weight(size_t k) const { return *weights[k]; }
  Param &bias() const { return *b; }

  /// Y[rows, out] = sum_k X[k] W_k^T + b, X[k] being [rows, inputWidth(k)].
  void forward(const std::vector<const float *> &X, int64_t rows,
               float *Y) const;
  /// Given dY: every W_k.grad += dY^T X[k], b.grad += column sums of dY,
  /// and dX[k] (where given) += dY W_k (or = dY W_k without accumulateDx).
  void backward(const std::vector<const float *> &X, int64_t rows,
                const float *dY, const std::vector<float *> &dX,
                bool accumulateDx = true) const;

private:
  int64_t out;
  std::vector<Param *> weights;
  Param *b;
};

} // namespace models

#endif
