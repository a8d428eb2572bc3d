//===- GpuCell.h - Run a compiled cell's plan on an NVIDIA GPU --*- C++ -*-===//
//
// The GPU twin of cellrt::Cell: the same plan (cellc -emit=plan), the
// kernels as PTX (cellc --target=nvptx -emit=ptx) loaded with the driver
// API, the products on cuBLAS with the plan's stacked weights. Arrays in
// ForwardArgs are host arrays; they are copied to the device and back.
//
// Not yet on the GPU: backward (training runs on the CPU backend). Nothing
// here has been executed on a GPU: these machines have none (see
// docs/gpu.md for what has been checked and how).
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_CUDA_GPUCELL_H
#define CELLRT_CUDA_GPUCELL_H

#include "cellrt/Runtime.h"

#include <memory>
#include <string>

namespace cellrt::cuda {

class GpuCell {
public:
  /// Loads the plan and the PTX module; fails with "no CUDA driver found
  /// (...); use --device cpu" where there is no GPU.
  static Expected<GpuCell> load(const std::string &planText,
                                const std::string &ptx);
  GpuCell(GpuCell &&) noexcept;
  GpuCell &operator=(GpuCell &&) noexcept;
  ~GpuCell();

  const Plan &getPlan() const;
  /// Inference over a padded batch, as cellrt::Cell::forward.
  Status forward(const ForwardArgs &args) const;

  struct Impl;

private:
  explicit GpuCell(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace cellrt::cuda

#endif // CELLRT_CUDA_GPUCELL_H
