//===- cellrt/Device.h - Where a cell's plan runs ---------------*- C++ -*-===//
//
// The executor runs a plan (products, kernels, copies) through a Device, so
// one executor serves the CPU and the GPU: the CPU device runs cellc's
// kernels as functions and the products on oneDNN in host memory; the CUDA
// device (runtime/cuda) launches the same kernels from PTX and the products
// on cuBLAS in device memory. A backend implements this interface and
// builds its cells with Cell::create; users only ever see cellrt::Cell.
//
// Addresses the executor gets from a device are `float *` whatever memory
// they point into: the executor only offsets them and hands them back, and
// it dereferences them only when sharesHostMemory() is true.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_DEVICE_H
#define CELLRT_DEVICE_H

#include "cellrt/Plan.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cellrt {

class PackedProduct;

/// One kernel launch: rows [rowBegin, rowEnd) of kernel `kernel` at `step`,
/// the arguments as the kernel ABI (cellrt/Kernel.h) has them. `lengths`
/// and `dims` are device addresses; `pointers` and `strides` are host
/// arrays of device addresses and row strides, valid during the call.
struct KernelLaunch {
  int64_t kernel = 0;
  int64_t rowBegin = 0, rowEnd = 0, step = 0;
  const int32_t *lengths = nullptr;
  const int64_t *dims = nullptr;
  std::vector<float *> *pointers = nullptr;
  std::vector<int64_t> *strides = nullptr;
  /// The kernel's scratch lengths in floats, when the device provides the
  /// scratch itself (scratchPerRow() false): one buffer per thread, shared
  /// by the rows that thread runs, passed after the arguments with row
  /// stride 0. Null or empty when the kernel needs none, or when the
  /// executor already put per-row buffers into `pointers`.
  const std::vector<int64_t> *scratchLengths = nullptr;
  /// About rows x elements per row x steps: whether splitting pays.
  int64_t work = 0;
};

class Device {
public:
  virtual ~Device();

  /// True when device memory is host memory: the caller's arrays are used
  /// in place and nothing is copied in or out.
  virtual bool sharesHostMemory() const = 0;
  /// Every kernel takes its row-local scratch (the plan's `scratch` lines)
  /// as extra arguments after its operands. True: the executor allocates
  /// one [rows, LEN] buffer per slot and passes it (GPU: every row runs at
  /// once). False: the device hands each thread one buffer per slot from
  /// KernelLaunch::scratchLengths (CPU: rows of one thread run in turn).
  virtual bool scratchPerRow() const = 0;
  /// The kernels this device can launch.
  virtual int64_t numKernels() const = 0;
  /// What its products read (cellrt/Plan.h). The CPU device multiplies in
  /// either precision; a device that keeps this default, in f32.
  virtual Precision precision() const { return Precision::F32; }

  /// Device memory; null when it cannot be had. Contents are undefined.
  virtual void *allocate(size_t bytes) = 0;
  virtual void release(void *memory) = 0;
  virtual void upload(void *device, const void *host, size_t bytes) = 0;
  virtual void download(void *host, const void *device, size_t bytes) = 0;
  virtual void copy(void *target, const void *source, size_t bytes) = 0;
  virtual void zero(float *target, int64_t count) = 0;
  /// target[i] += source[i].
  virtual void accumulate(float *target, const float *source,
                          int64_t count) = 0;
  /// target[j] += sum over r < rows of source[r * stride + j], j < length.
  virtual void sumRows(const float *source, int64_t rows, int64_t stride,
                       int64_t length, float *target) = 0;

  /// The three products of a plan, row-major with row strides in floats
  /// (see runtime/Gemm.h for the CPU's):
  /// out[rows, n] = in[rows, k] · weight[n, k]ᵀ.
  virtual Status gemmTransposedWeight(int64_t rows, int64_t n, int64_t k,
                                      const float *in, int64_t inStride,
                                      const float *weight,
                                      int64_t weightStride, float *out,
                                      int64_t outStride) = 0;
  /// out[rows, n] += in[rows, k] · weight[k, n].
  virtual Status gemmAccumulate(int64_t rows, int64_t n, int64_t k,
                                const float *in, int64_t inStride,
                                const float *weight, int64_t weightStride,
                                float *out, int64_t outStride) = 0;
  /// out[m, n] += a[k, m]ᵀ · b[k, n].
  virtual Status gemmAccumulateTransposedInput(int64_t m, int64_t n, int64_t k,
                                               const float *a, int64_t aStride,
                                               const float *b, int64_t bStride,
                                               float *out,
                                               int64_t outStride) = 0;
  /// gemmTransposedWeight's product where the caller's PackedWeights also
  /// hold the weight packed for oneDNN's matmul (`packed`: on devices that
  /// share host memory). The CPU multiplies by that copy; by default, and
  /// wherever oneDNN wants another layout, by `weight` as usual.
  virtual Status gemmPacked(int64_t rows, int64_t n, int64_t k, const float *in,
                            int64_t inStride, const float *weight,
                            int64_t weightStride, const PackedProduct &packed,
                            float *out, int64_t outStride) {
    (void)packed;
    return gemmTransposedWeight(rows, n, k, in, inStride, weight, weightStride,
                                out, outStride);
  }

  /// gemmAccumulate's product where the call packed the weight for it
  /// (PackedProduct::Use::Backward; on devices that share host memory).
  virtual Status gemmAccumulatePacked(int64_t rows, int64_t n, int64_t k,
                                      const float *in, int64_t inStride,
                                      const float *weight, int64_t weightStride,
                                      const PackedProduct &packed, float *out,
                                      int64_t outStride) {
    (void)packed;
    return gemmAccumulate(rows, n, k, in, inStride, weight, weightStride, out,
                          outStride);
  }

  /// Row b of `target` = row rows[b] of `source`, `width` floats each, for
  /// b < count (a step's beam reordering of states in device memory);
  /// `rows` is a host array, valid during the call. By default one copy
  /// per row.
  virtual void gatherRows(float *target, const float *source,
                          const int32_t *rows, int64_t count, int64_t width) {
    for (int64_t b = 0; b < count; ++b)
      copy(target + b * width, source + int64_t(rows[b]) * width,
           size_t(width) * sizeof(float));
  }

  virtual Status launch(const KernelLaunch &call) = 0;
  /// Waits for everything queued; reports an error raised asynchronously.
  virtual Status synchronize() = 0;
};

} // namespace cellrt

#endif // CELLRT_DEVICE_H
