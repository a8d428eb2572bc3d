//===- python/ops/Run.h - The op cellc::run, with its autograd --*- C++ -*-===//
//
//   cellc::run(__torch__.torch.classes.cellc.Cell cell, Tensor[] inputs,
//              Tensor[] init, Tensor[] params, Tensor lengths, bool reverse)
//       -> Tensor[]
//
// runs a compiled cell over a padded batch in cellrt, on the tensors' own
// memory: inputs [T, B, LEN] (one per cell input), init [B, LEN] (one per
// state, or none for zeros), params in the cell's order, lengths B step
// counts (a 1-D integer tensor, read at every call, so that T and B may
// change). It returns the output [T, B, W] (zeros at padded steps) and the
// final states [B, LEN]. Where a gradient is wanted, forward records a
// cellrt::Tape and backward runs cellrt's backward kernels: inputs, initial
// states and params get gradients. Tensors must be CPU float32 and
// contiguous; anything else is an error naming the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_PYTHON_OPS_RUN_H
#define CELLC_PYTHON_OPS_RUN_H

#include "ScriptCell.h"

#include <ATen/core/Tensor.h>

#include <vector>

namespace cellc::ops {

/// What one call of cellc::run keeps for its backward: the call's sizes, the
/// runtime cell that ran it and the tape. A custom class so that the
/// autograd context's saved_data can hold it.
struct CallRecord : torch::CustomClassHolder {
  std::shared_ptr<const cellrt::Cell> runtime;
  /// Holds the kernels `runtime` and the tape point at.
  std::shared_ptr<const jit::CompiledCell> object;
  std::vector<int32_t> lengths;
  bool reverse = false;
  size_t numInputs = 0, numInit = 0;
  cellrt::Tape tape;
};

/// The op's kernel.
std::vector<at::Tensor> run(const c10::intrusive_ptr<ScriptCell> &cell,
                            at::TensorList inputs, at::TensorList init,
                            at::TensorList params, const at::Tensor &lengths,
                            bool reverse);

} // namespace cellc::ops

#endif // CELLC_PYTHON_OPS_RUN_H
