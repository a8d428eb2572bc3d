//===- AtrCheck.h - Compare an ATR cell image against LibTorch --*- C++ -*-===//
//
// The comparison runs on any `cellrt_image` of the ATR cell (params Wx [H, I]
// and Wh [H, H], one input, one state): the hand-written test double here and
// the object cellc compiles from cells/atr.cell. This header keeps LibTorch
// out of the test files; AtrCheck.cpp is the one TU that includes it.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_TEST_NUMERICS_ATRCHECK_H
#define CELLRT_TEST_NUMERICS_ATRCHECK_H

#include "cellrt/Kernel.h"

#include <cstdint>
#include <vector>

namespace cellrt_test {

/// One problem size: T steps, B sequences, input width I, state width H.
struct AtrSize {
  int64_t steps, batch, inputSize, hidden;
};

/// Ragged batches from one sequence up to a few hundred units.
std::vector<AtrSize> defaultAtrSizes();

/// Runs the image through cellrt for every size, both directions, with and
/// without an initial state, and expects outputs and final states within a
/// relative error of `tolerance` (max |a - b| / max |b|) of a float64 LibTorch
/// evaluation of
///   p = Wx x; q = Wh h; i = sigmoid(p + q); f = sigmoid(p - q);
///   h' = i * p + f * h
/// that walks each sequence separately. Reports through GoogleTest.
void runAtrCheck(const cellrt_image &image,
                 const std::vector<AtrSize> &sizes = defaultAtrSizes(),
                 double tolerance = 1e-5);

/// Training mode: for every size, both directions, with and without an
/// initial state, runs forward(args, tape) and backward() and expects the
/// gradients of L = sum(out * dOut) + sum(finalState * dFinal) (random dOut,
/// nonzero at padded steps too, and dFinal) with respect to x, h0, Wx and Wh
/// within `tolerance` (max |a - b| / max |b|) of float64 LibTorch autograd
/// through the same per-sequence reference. Also expects zero input
/// gradients at padded steps, a training-mode forward that matches the
/// reference, and a second backward() that doubles every gradient. The
/// image's plan needs backward directives. Reports through GoogleTest and
/// prints the largest error per array.
void runAtrGradientCheck(const cellrt_image &image,
                         const std::vector<AtrSize> &sizes = defaultAtrSizes(),
                         double tolerance = 1e-4);

} // namespace cellrt_test

#endif // CELLRT_TEST_NUMERICS_ATRCHECK_H
