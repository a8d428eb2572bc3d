//===- models/common/LinearSum.cpp - Linear over several inputs ----------===//

#include "models/common/LinearSum.h"

#include "models/common/Math.h"

#include "cellrt/KeepRoundedOperands.h"

#include <stdexcept>

namespace models {

LinearSum::LinearSum(ParamStore &store, const std::string &name,
                     const std::vector<Input> &inputs, int64_t out)
    : out(out) {
  if (inputs.empty())
    throw std::invalid_argument(name + ": a linear sum needs an input");
  for (const Input &input : inputs)
    weights.push_back(&store.add(name + "." + input.name, {out, input.width}));
  b = &store.add(name + ".b", {out});
}

void LinearSum::forward(const std::vector<const float *> &X, int64_t rows,
                        float *Y) const {
  if (X.size() != weights.size())
    throw std::invalid_argument("linear sum: " +
                                std::to_string(weights.size()) +
                                " inputs expected, got " +
                                std::to_string(X.size()));
  for (size_t k = 0; k < weights.size(); ++k)
    linear(X[k], rows, inputWidth(k), weights[k]->value.data(), out, Y,
           /*accumulate=*/k > 0);
  addBias(Y, rows, out, b->value.data());
}

void LinearSum::backward(const std::vector<const float *> &X, int64_t rows,
                         const float *dY, const std::vector<float *> &dX,
                         bool accumulateDx) const {
  if (!b->frozen)
    biasBackward(dY, rows, out, b->grad.data());
  // In bf16 every input's two products read dY: rounded once for all.
  cellrt::KeepRoundedOperands roundOnce(productPrecision() ==
                                        cellrt::Precision::BF16);
  for (size_t k = 0; k < weights.size(); ++k) {
    const Param &W = *weights[k];
    float *dInput = k < dX.size() ? dX[k] : nullptr;
    linearBackward(X[k], rows, inputWidth(k), W.value.data(), out, dY,
                   W.frozen ? nullptr : weights[k]->grad.data(), dInput,
                   accumulateDx);
  }
}

} // namespace models
