//===- PlanLayout.h - A plan's widths and indices for one set of sizes -*- C++ -*-===//
//
// Issue #16, item 1: the plan's rules (array widths, column offsets, weight
// shapes, which array a name refers to) evaluated once per set of sizes and
// kept by index, so that a call binds its operands without evaluating an
// expression or looking a name up. DimBinder::bind makes one with each set
// of sizes; through SizesCache every call with the same shapes shares it.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_PLANLAYOUT_H
#define CELLRT_PLANLAYOUT_H

#include "cellrt/Plan.h"

#include <cstdint>
#include <vector>

namespace cellrt::detail {

struct Sizes;

/// One operand: its array (an index among the plan's inputs, states,
/// buffers or params, by the ref's kind; -1 for out and dout), the array's
/// width and the operand's first column.
struct OperandLayout {
  int64_t index = -1;
  int64_t arrayWidth = 0, column = 0;
};

/// One operation of the plan.
struct OperationLayout {
  std::vector<OperandLayout> operands;
  /// Gemm, Wgrad: the stacked weight's index. Pgrad: the param's index.
  int64_t weight = -1, param = -1;
  /// Kernel: the lengths of the row-local scratch it takes.
  std::vector<int64_t> scratchLengths;
};

struct PlanLayout {
  PlanLayout(const Plan &plan, const Sizes &sizes);

  /// In the plan's order: operations, dims, buffers, states, inputs, params,
  /// weights.
  std::vector<OperationLayout> operations;
  std::vector<int64_t> dimValues, bufferLengths, stateWidths, inputWidths;
  /// Per param: its element count and its rows (shape[0]).
  std::vector<int64_t> paramCounts, paramRows;
  /// Per weight: its stacked params' indices and its shape.
  std::vector<std::vector<int64_t>> weightParams;
  std::vector<int64_t> weightRows, weightCols;
  /// The kernels' `out` row: the output, then the probes.
  int64_t kernelOutputWidth = 0;
};

} // namespace cellrt::detail

#endif // CELLRT_PLANLAYOUT_H
