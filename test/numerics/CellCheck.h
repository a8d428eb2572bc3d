//===- CellCheck.h - Compare a compiled cell against its reference -*- C++
//-*-===//
//
// A generic harness: it runs any `cellrt_image` through cellrt and compares
// outputs, final states and gradients with the cell's hand-written LibTorch
// reference (References.h) evaluated in float64, one sequence at a time.
// This header keeps LibTorch out of the test files; CellCheck.cpp is the one
// TU that includes <torch/torch.h>.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_NUMERICS_CELLCHECK_H
#define CELLC_TEST_NUMERICS_CELLCHECK_H

#include "cellrt/Kernel.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cellc_test {

struct Reference;

/// One problem size: T steps, B sequences, and a value for every plan dim by
/// name (`H`, `I`, ...).
struct CellSize {
  int64_t steps = 1, batch = 1;
  std::map<std::string, int64_t> dims;

  std::string str() const;
};

/// Sizes for a cell: small odd ones (T=5, B=3, I=7, H=6), a single step of a
/// single sequence and a larger batch (T=20, B=8, I=64, H=48); I = H for
/// cells whose highway connection needs it.
std::vector<CellSize> defaultCellSizes(const Reference &reference);

/// The largest relative errors (max |a - b| / max |b|) one check measured,
/// and the array each came from.
struct CellCheckReport {
  double output = 0, finalStates = 0, inputGradients = 0,
         initialStateGradients = 0, paramGradients = 0;
  std::string worstFinalState, worstInitialStateGradient, worstParamGradient;
  /// How many (size, direction, initial state) cases ran.
  int cases = 0;

  std::string str() const;
};

/// Runs the image forward through cellrt for every size, in both directions,
/// with random and with zero initial states, over ragged lengths (one
/// sequence of length T and one of length 1), and expects the output and every
/// final state within `tolerance` of the reference walked per sequence in
/// float64; padded outputs must be exactly 0. Params are uniform in
/// [-0.5, 0.5] with the shapes the plan declares, bound to the size's dims.
/// Reports through GoogleTest (non-fatal failures name the array and case).
CellCheckReport checkCellForward(const cellrt_image &image,
                                 const Reference &reference,
                                 const std::vector<CellSize> &sizes,
                                 double tolerance = 1e-4);

/// Same cases, in training mode: L = sum(out * dout) + sum over states of
/// sum(final * dfinal) with random dout and dfinal; the gradients of L with
/// respect to every input, initial state and param from cellrt's
/// forward(args, tape) + backward() must be within `tolerance` of LibTorch
/// autograd through the reference in float64, and padded steps' input
/// gradients must be exactly 0. The caller skips when the cell has no
/// backward plan.
CellCheckReport checkCellGradients(const cellrt_image &image,
                                   const Reference &reference,
                                   const std::vector<CellSize> &sizes,
                                   double tolerance = 1e-4);

/// Whether the image's plan carries backward directives (false, too, when it
/// does not load; the forward check reports that).
bool imageHasBackward(const cellrt_image &image);

} // namespace cellc_test

#endif // CELLC_TEST_NUMERICS_CELLCHECK_H
