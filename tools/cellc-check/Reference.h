//===- Reference.h - A float64 LibTorch interpreter of a cell ---*- C++ -*-===//
//
// cellc-check's reference: it evaluates a checked cell straight from its
// AST (frontend/AST.h), one sequence and one step at a time, in float64
// LibTorch with autograd. It shares nothing with the compiler past the
// front end, so it checks the passes, the kernels and the runtime alike.
// Reference.cpp is the only TU that includes <torch/torch.h>; this interface
// is plain C++ and nothing in it throws.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TOOLS_CELLC_CHECK_REFERENCE_H
#define CELLC_TOOLS_CELLC_CHECK_REFERENCE_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cellc {
namespace ast {
struct Cell;
} // namespace ast

namespace check {

/// A padded batch in float64, row-major, shapes as for cellrt.
struct Batch {
  int64_t T = 0, B = 0;
  std::vector<int32_t> lengths;
  bool reverse = false;
  /// [T, B, LEN] per input.
  std::map<std::string, std::vector<double>> inputs;
  /// [B, LEN] per state.
  std::map<std::string, std::vector<double>> initialStates;
  /// [ROWS, COLS] or [LEN] per param.
  std::map<std::string, std::vector<double>> params;
  /// The loss is sum(output * outputGradient) + sum over states of
  /// sum(final * finalStateGradient): [T, B, OUT] and [B, LEN].
  std::vector<double> outputGradient;
  std::map<std::string, std::vector<double>> finalStateGradients;
  /// Values of the step to record (cellc --probe): `i`, `h'`, ...
  std::vector<std::string> probes;
};

/// What the reference computes for a batch.
struct Evaluation {
  std::vector<double> output;
  std::map<std::string, std::vector<double>> finalStates;
  /// [T, B, LEN] per Batch::probes name, zeros at padded steps.
  std::map<std::string, std::vector<double>> probes;
  double loss = 0;
  /// Filled only when gradients were asked for.
  std::map<std::string, std::vector<double>> inputGradients;
  std::map<std::string, std::vector<double>> initialStateGradients;
  std::map<std::string, std::vector<double>> paramGradients;
};

/// Evaluates `cell` over `batch`; `sizes` gives every symbolic dimension's
/// value. Returns "" on success, else an error. `singlePrecision` computes
/// in float32 (results still as double): how far that lands from float64
/// measures how much rounding the batch amplifies.
std::string evaluateReference(const ast::Cell &cell,
                              const std::map<std::string, int64_t> &sizes,
                              const Batch &batch, bool withGradients,
                              Evaluation &result,
                              bool singlePrecision = false);

/// The concrete shape of a declaration of `cell` (input/state: [LEN];
/// param: [ROWS, COLS] or [LEN]) under `sizes`.
std::vector<int64_t> declaredShape(const ast::Cell &cell,
                                   const std::string &name,
                                   const std::map<std::string, int64_t> &sizes);

} // namespace check
} // namespace cellc

#endif // CELLC_TOOLS_CELLC_CHECK_REFERENCE_H
