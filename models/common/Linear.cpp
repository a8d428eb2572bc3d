//===- models/common/Linear.cpp - A fully connected layer -----------------===//

#include "models/common/Linear.h"

#include "models/common/Math.h"

#include "cellrt/KeepRoundedOperands.h"

namespace models {

Linear::Linear(ParamStore &store, const std::string &name, int64_t in,
               int64_t out, bool bias)
    : in(in), out(out), W(&store.add(name + ".W", {out, in})) {
  if (bias)
    b = &store.add(name + ".b", {out});
}

Linear::Linear(ParamStore &store, const std::string &name, Param &tiedWeight,
               bool bias)
    : in(tiedWeight.shape.at(1)), out(tiedWeight.shape.at(0)), W(&tiedWeight) {
  if (bias)
    b = &store.add(name + ".b", {out});
}

void Linear::forward(const float *X, int64_t rows, float *Y,
                     bool accumulate) const {
  linear(X, rows, in, W->value.data(), out, Y, accumulate);
  if (b)
    addBias(Y, rows, out, b->value.data());
}

void Linear::forwardWithoutBias(const float *X, int64_t rows, float *Y) const {
  linear(X, rows, in, W->value.data(), out, Y, /*accumulate=*/false);
}

void Linear::backward(const float *X, int64_t rows, const float *dY, float *dX,
                      bool accumulateDx) const {
  backwardWithoutBias(X, rows, dY, dX, accumulateDx);
  if (b && !b->frozen)
    biasBackward(dY, rows, out, b->grad.data());
}

void Linear::backwardWithoutBias(const float *X, int64_t rows, const float *dY,
                                 float *dX, bool accumulateDx,
                                 const uint16_t *roundedDY) const {
  // In bf16 both products read dY (the NMT output layer's is [rows,
  // vocabulary]): rounded once, or not at all where the caller has.
  cellrt::KeepRoundedOperands roundOnce(productPrecision() ==
                                        cellrt::Precision::BF16);
  if (roundedDY)
    roundOnce.lend(dY, rows, out, out, roundedDY);
  if (!W->frozen)
    linearBackward(X, rows, in, W->value.data(), out, dY, W->grad.data(),
                   nullptr, false);
  if (dX)
    linearBackward(X, rows, in, W->value.data(), out, dY, nullptr, dX,
                   accumulateDx);
}

} // namespace models
