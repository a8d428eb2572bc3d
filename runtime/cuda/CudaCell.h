//===- CudaCell.h - Compiled cells on an NVIDIA GPU -------------*- C++ -*-===//
//
// loadCell gives a cellrt::Cell whose plan runs on GPU 0: the same plan as
// on the CPU (cellc -emit=plan), the kernels as PTX (cellc --target=nvptx
// -emit=ptx) loaded with the driver API, the products on cuBLAS. forward,
// forward with a Tape, backward and step work as on the CPU, with host
// arrays (the executor copies them to the device and the results back) or
// with arrays in GPU memory from Cell::allocateArray (Memory::Device: used
// in place, nothing copied).
//
// Checked on an H100 against the CPU for every cell (test/unit/
// CudaGpuTest.cpp, skipped where there is no GPU, as in CI); the executor
// is the CPU's, tested in CI on a device with separate memory
// (test/unit/DeviceTest.cpp). docs/gpu.md says what has been checked.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_CUDA_CUDACELL_H
#define CELLRT_CUDA_CUDACELL_H

#include "cellrt/Runtime.h"

#include <string>

namespace cellrt::cuda {

/// Whether a CUDA driver and GPU 0 are usable; the error says why not
/// ("no CUDA driver found (...); use --device cpu").
Status available();

/// Loads the plan's tables (`cellc --target=nvptx -emit=tables`) and the
/// PTX module (`-emit=ptx`) on GPU 0; fails with "no CUDA driver found
/// (...); use --device cpu" where there is no GPU.
Expected<Cell> loadCell(const std::string &tables, const std::string &ptx);

} // namespace cellrt::cuda

#endif // CELLRT_CUDA_CUDACELL_H
