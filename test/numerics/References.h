//===- References.h - The published cell equations in LibTorch --*- C++ -*-===//
//
// Hand-written LibTorch versions of every cell in cells/, written from the
// published equations (docs: /work/shared/design/seed-systems.md and the
// papers), not from the .cell files' text. They take the params by the names
// the .cell files declare, so the same parameter values drive both sides of
// the comparison; where a .cell's parameterisation differs from the paper
// (biases, RAN's choice h = tanh(c), SR-NMT's single joint projection) the
// reference follows the declared params but still writes the paper's math.
//
// A step works on one sequence (x [I], states [H]) or on a batch (x [B, I],
// states [B, H]); the comparison walks each sequence on its own in float64.
// Only ATen's Tensor is needed here, so this header stays cheap; the one TU
// that includes <torch/torch.h> is CellCheck.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_NUMERICS_REFERENCES_H
#define CELLC_TEST_NUMERICS_REFERENCES_H

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace cellc_test {

/// Params by the names the .cell file declares.
using ReferenceParams = std::map<std::string, at::Tensor>;

/// What one step produces: every state's next value (in the .cell's state
/// order) and what the cell emits at this step.
struct ReferenceStep {
  std::vector<at::Tensor> next;
  at::Tensor output;
};

/// One cell's reference: its interface as the .cell file declares it and the
/// step function from the paper.
struct Reference {
  /// The cell's name (`cell NAME` in the .cell file and the plan).
  std::string cell;
  /// Where the equations come from, for failure messages.
  std::string source;
  /// The .cell's inputs, states and params, in declaration order.
  std::vector<std::string> inputs;
  std::vector<std::string> states;
  std::vector<std::string> params;
  /// True when the equations need the input as wide as the state (highway
  /// connections: SRU, SR-NMT).
  bool inputIsHidden = false;
  /// One step: x is the (single) input at this step, states the current
  /// values in `states` order.
  std::function<ReferenceStep(const ReferenceParams &params,
                              const at::Tensor &x,
                              const std::vector<at::Tensor> &states)>
      step;
};

const Reference &atrReference();
const Reference &gruReference();
const Reference &torchGruReference();
const Reference &lstmReference();
const Reference &ranReference();
const Reference &lauReference();
const Reference &sruReference();
const Reference &srnmtReference();
const Reference &rnnReference();

/// Every reference above, in that order.
std::vector<const Reference *> allReferences();

} // namespace cellc_test

#endif // CELLC_TEST_NUMERICS_REFERENCES_H
