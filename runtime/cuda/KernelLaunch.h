//===- KernelLaunch.h - Packing a cellc kernel's launch arguments -*- C++ -*-===//
//
// Every cellc GPU kernel has the signature of cellrt_kernel_fn:
//   (i64 row_begin, i64 row_end, i64 step, i32* lengths, i64* dims,
//    f32** ptrs, i64* strides)
// and runs one block per row, of lanes sized per launch (launchShape). This
// header has no CUDA dependency so the packing is unit-tested against the
// .entry declarations in cellc's PTX.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_CUDA_KERNELLAUNCH_H
#define CELLRT_CUDA_KERNELLAUNCH_H

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cellrt::cuda {

/// One launch's geometry: one block of `lanes` threads per row. cellc's GPU
/// kernels run a row per block: threadIdx.x is the lane, and lane l takes
/// elements l, l + lanes, ... of every vector of the row.
struct LaunchShape {
  int64_t blocks = 0, lanes = 0;
};

/// The geometry for `rows` rows on a GPU with `multiprocessors` SMs, chosen
/// per launch: a block per row, with more lanes the fewer the rows, so that
/// a step over B = 64 rows (fewer blocks than SMs) still keeps 8 warps per
/// row in flight, and the `pre` kernels over all T*B rows use 2-warp blocks.
LaunchShape launchShape(int64_t rows, int64_t multiprocessors);

/// The values of one launch, in the kernel's parameter order. Pointers are
/// device addresses.
struct KernelCall {
  int64_t rowBegin = 0, rowEnd = 0, step = 0;
  uint64_t lengths = 0, dims = 0, pointers = 0, strides = 0;
};

/// cuLaunchKernel's kernelParams: one pointer per parameter, into `call`.
std::array<void *, 7> packKernelArguments(KernelCall &call);

/// Byte sizes of the parameters `packKernelArguments` passes, in order.
std::array<size_t, 7> packedArgumentSizes();


/// The PTX types (".u64", ".u32", ...) of `entry`'s parameters, read from
/// its `.entry` declaration; empty if `entry` is not in `ptx`.
std::vector<std::string> entryParameterTypes(const std::string &ptx,
                                             const std::string &entry);

/// Bytes of a PTX parameter type (".u64" -> 8), 0 if unknown.
size_t ptxTypeSize(const std::string &type);

} // namespace cellrt::cuda

#endif // CELLRT_CUDA_KERNELLAUNCH_H
