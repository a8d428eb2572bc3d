//===- HostDevice.h - Plans on the CPU: kernels as functions ----*- C++ -*-===//
//
// The CPU device: memory is host memory (the caller's arrays are used in
// place), kernels are cellc's compiled functions with their rows split
// across the runtime's threads, products go to oneDNN (runtime/Gemm.h), in
// f32 or, for a bf16 plan, reading bfloat16.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_HOSTDEVICE_H
#define CELLRT_HOSTDEVICE_H

#include "Gemm.h"
#include "cellrt/Device.h"
#include "cellrt/Kernel.h"

#include <vector>

namespace cellrt::detail {

class HostDevice : public Device {
public:
  explicit HostDevice(std::vector<cellrt_kernel_fn> kernels,
                      Precision precision = Precision::F32)
      : kernels(std::move(kernels)), productPrecision(precision) {}

  bool sharesHostMemory() const override { return true; }
  Precision precision() const override { return productPrecision; }
  bool scratchPerRow() const override { return false; }
  int64_t numKernels() const override {
    return static_cast<int64_t>(kernels.size());
  }

  void *allocate(size_t bytes) override;
  void release(void *memory) override;
  void upload(void *device, const void *host, size_t bytes) override;
  void download(void *host, const void *device, size_t bytes) override;
  void copy(void *target, const void *source, size_t bytes) override;
  void zero(float *target, int64_t count) override;
  void accumulate(float *target, const float *source, int64_t count) override;
  void sumRows(const float *source, int64_t rows, int64_t stride,
               int64_t length, float *target) override;

  Status gemmTransposedWeight(int64_t rows, int64_t n, int64_t k,
                              const float *in, int64_t inStride,
                              const float *weight, int64_t weightStride,
                              float *out, int64_t outStride) override;
  Status gemmAccumulate(int64_t rows, int64_t n, int64_t k, const float *in,
                        int64_t inStride, const float *weight,
                        int64_t weightStride, float *out,
                        int64_t outStride) override;
  Status gemmAccumulateTransposedInput(int64_t m, int64_t n, int64_t k,
                                       const float *a, int64_t aStride,
                                       const float *b, int64_t bStride,
                                       float *out, int64_t outStride) override;
  Status gemmPacked(int64_t rows, int64_t n, int64_t k, const float *in,
                    int64_t inStride, const float *weight, int64_t weightStride,
                    const PackedProduct &packed, float *out,
                    int64_t outStride) override;

  Status gemmAccumulatePacked(int64_t rows, int64_t n, int64_t k,
                              const float *in, int64_t inStride,
                              const float *weight, int64_t weightStride,
                              const PackedProduct &packed, float *out,
                              int64_t outStride) override;

  Status launch(const KernelLaunch &call) override;
  Status synchronize() override { return Status::success(); }

  /// The compiled function of kernel `index` (the tiled schedule calls
  /// kernels itself, TiledSteps.h).
  cellrt_kernel_fn kernel(int64_t index) const { return kernels[index]; }
  const std::vector<cellrt_kernel_fn> &kernelFunctions() const {
    return kernels;
  }

private:
  /// Whether `packed` holds a [weightRows, weightCols] weight for `use` in
  /// this device's precision (else the plain weight is multiplied).
  bool multipliesBy(const PackedProduct &packed, PackedProduct::Use use,
                    int64_t weightRows, int64_t weightCols) const;

  std::vector<cellrt_kernel_fn> kernels;
  Precision productPrecision;
};

} // namespace cellrt::detail

#endif // CELLRT_HOSTDEVICE_H
