//===- CudaDevice.cpp - A plan's operations on an NVIDIA GPU --------------===//
//
// The GPU's cellrt::Device: memory from cuMemAlloc, products on cuBLAS,
// cellc's PTX kernels launched one thread per row. Everything is queued on
// one stream in the executor's order, so a kernel's argument table can be
// copied into one device buffer before each launch: the copy is ordered
// after the previous kernel has read it. Downloads wait for the stream.
//
// cuBLAS is column-major: a row-major [R, C] array with row stride S is, to
// cuBLAS, its transpose, a [C, R] matrix with leading dimension S. Each
// product below is written as the transposed product cuBLAS computes.
//
//===----------------------------------------------------------------------===//

#include "CudaApi.h"
#include "CudaCell.h"
#include "KernelLaunch.h"

#include "cellrt/Device.h"
#include "cellrt/PlanTables.h"

#include <cstring>

using namespace cellrt;
using namespace cellrt::cuda;

namespace cellrt::cuda {
/// runtime/cuda/GatherRows.ptx (GatherRowsPtx.cpp, generated).
extern const char kGatherRowsPtx[];
} // namespace cellrt::cuda

namespace {

class CudaDevice : public Device {
public:
  ~CudaDevice() override {
    if (arguments)
      api->memFree(arguments);
    if (gatherRowList)
      api->memFree(gatherRowList);
    if (gatherModule)
      api->moduleUnload(gatherModule);
    if (ones)
      api->memFree(ones);
    if (blas)
      api->blasDestroy(blas);
    if (stream)
      api->streamDestroy(stream);
    if (module)
      api->moduleUnload(module);
  }

  static Expected<std::shared_ptr<CudaDevice>> load(const Api &api,
                                                    const Plan &plan,
                                                    const std::string &ptx);

  bool sharesHostMemory() const override { return false; }
  bool scratchPerRow() const override { return true; }
  int64_t numKernels() const override {
    return static_cast<int64_t>(kernels.size());
  }

  void *allocate(size_t bytes) override {
    CUdeviceptr memory = 0;
    if (api->memAlloc(&memory, bytes) != CUDA_SUCCESS)
      return nullptr;
    return reinterpret_cast<void *>(memory);
  }
  void release(void *memory) override { api->memFree(address(memory)); }
  void upload(void *device, const void *host, size_t bytes) override {
    // Pageable host memory is staged before the call returns: the caller
    // may reuse `host` at once.
    if (bytes)
      note(api->memcpyHtoDAsync(address(device), host, bytes, stream),
           "copy to the GPU");
  }
  void download(void *host, const void *device, size_t bytes) override {
    if (!bytes)
      return;
    note(api->memcpyDtoHAsync(host, address(device), bytes, stream),
         "copy from the GPU");
    note(api->streamSynchronize(stream), "copy from the GPU");
  }
  void copy(void *target, const void *source, size_t bytes) override {
    if (bytes)
      note(api->memcpyDtoDAsync(address(target), address(source), bytes,
                                stream),
           "copy on the GPU");
  }
  void zero(float *target, int64_t count) override {
    if (count > 0)
      note(api->memsetD32Async(address(target), 0, count, stream),
           "memset on the GPU");
  }
  void accumulate(float *target, const float *source, int64_t count) override {
    float one = 1;
    if (count > 0)
      noteBlas(api->saxpy(blas, static_cast<int>(count), &one, source, 1,
                          target, 1),
               "cublasSaxpy");
  }
  void sumRows(const float *source, int64_t rows, int64_t stride,
               int64_t length, float *target) override {
    // target += source^T · 1: to cuBLAS, source is [length, rows] with
    // leading dimension `stride`, times a vector of ones.
    if (rows <= 0 || length <= 0)
      return;
    const float *ones = onesOfLength(rows);
    if (!ones)
      return;
    float one = 1;
    noteBlas(api->sgemv(blas, CUBLAS_OP_N, static_cast<int>(length),
                        static_cast<int>(rows), &one, source,
                        static_cast<int>(stride), ones, 1, &one, target, 1),
             "cublasSgemv");
  }

  Status gemmTransposedWeight(int64_t rows, int64_t n, int64_t k,
                              const float *in, int64_t inStride,
                              const float *weight, int64_t weightStride,
                              float *out, int64_t outStride) override {
    // out = in · weightᵀ  <=>  outᵀ [n, rows] = weight · inᵀ.
    return cublasGemm(CUBLAS_OP_T, CUBLAS_OP_N, n, rows, k, weight,
                      weightStride, in, inStride, 0.0f, out, outStride);
  }
  Status gemmAccumulate(int64_t rows, int64_t n, int64_t k, const float *in,
                        int64_t inStride, const float *weight,
                        int64_t weightStride, float *out,
                        int64_t outStride) override {
    // out += in · weight  <=>  outᵀ [n, rows] += weightᵀ · inᵀ.
    return cublasGemm(CUBLAS_OP_N, CUBLAS_OP_N, n, rows, k, weight,
                      weightStride, in, inStride, 1.0f, out, outStride);
  }
  Status gemmAccumulateTransposedInput(int64_t m, int64_t n, int64_t k,
                                       const float *a, int64_t aStride,
                                       const float *b, int64_t bStride,
                                       float *out, int64_t outStride) override {
    // out += aᵀ · b  <=>  outᵀ [n, m] += bᵀ · a.
    return cublasGemm(CUBLAS_OP_N, CUBLAS_OP_T, n, m, k, b, bStride, a, aStride,
                      1.0f, out, outStride);
  }

  void gatherRows(float *target, const float *source, const int32_t *rows,
                  int64_t count, int64_t width) override {
    if (count <= 0)
      return;
    if (!gatherKernel || !ensureGatherRows(count)) {
      Device::gatherRows(target, source, rows, count, width);
      return;
    }
    upload(reinterpret_cast<void *>(gatherRowList), rows,
           size_t(count) * sizeof(int32_t));
    uint64_t to = address(target), from = address(source), list = gatherRowList;
    int64_t floats = width;
    void *parameters[] = {&to, &from, &list, &floats};
    note(api->launchKernel(gatherKernel, static_cast<unsigned>(count), 1, 1,
                           kGatherLanes, 1, 1, 0, stream, parameters, nullptr),
         "gathering state rows");
  }

  Status launch(const KernelLaunch &call) override {
    int64_t rows = call.rowEnd - call.rowBegin;
    if (rows <= 0)
      return Status::success();
    size_t pointerBytes = call.pointers->size() * sizeof(uint64_t);
    size_t strideBytes = call.strides->size() * sizeof(int64_t);
    Status status = ensureArguments(pointerBytes + strideBytes);
    if (!status.ok())
      return status;
    // One table: the pointers, then the strides.
    std::vector<char> table(pointerBytes + strideBytes);
    std::memcpy(table.data(), call.pointers->data(), pointerBytes);
    std::memcpy(table.data() + pointerBytes, call.strides->data(),
                strideBytes);
    upload(reinterpret_cast<void *>(arguments), table.data(), table.size());
    KernelCall packed;
    packed.rowBegin = call.rowBegin;
    packed.rowEnd = call.rowEnd;
    packed.step = call.step;
    packed.lengths = reinterpret_cast<uint64_t>(call.lengths);
    packed.dims = reinterpret_cast<uint64_t>(call.dims);
    packed.pointers = arguments;
    packed.strides = arguments + pointerBytes;
    std::array<void *, 7> parameters = packKernelArguments(packed);
    LaunchShape shape = launchShape(rows, multiprocessors);
    CUresult result = api->launchKernel(
        kernels[call.kernel], static_cast<unsigned>(shape.blocks), 1, 1,
        static_cast<unsigned>(shape.lanes), 1, 1, 0, stream,
        parameters.data(), nullptr);
    if (result != CUDA_SUCCESS)
      return Status::error(api->describe(
          result, "launching kernel " + std::to_string(call.kernel)));
    return Status::success();
  }

  Status synchronize() override {
    note(api->streamSynchronize(stream), "running the cell");
    Status status = firstError;
    firstError = Status::success();
    return status;
  }

private:
  static CUdeviceptr address(const void *pointer) {
    return reinterpret_cast<CUdeviceptr>(pointer);
  }
  /// Operations that return nothing keep their first error for synchronize.
  void note(CUresult result, const char *what) {
    if (result != CUDA_SUCCESS && firstError.ok())
      firstError = Status::error(api->describe(result, what));
  }
  void noteBlas(cublasStatus_t result, const char *what) {
    if (result != CUBLAS_STATUS_SUCCESS && firstError.ok())
      firstError = Status::error(std::string(what) + " failed (status " +
                                 std::to_string(static_cast<int>(result)) +
                                 ")");
  }

  Status cublasGemm(cublasOperation_t opA, cublasOperation_t opB, int64_t m,
                    int64_t n, int64_t k, const float *a, int64_t lda,
                    const float *b, int64_t ldb, float beta, float *c,
                    int64_t ldc) {
    if (m == 0 || n == 0 || (k == 0 && beta == 1.0f))
      return Status::success();
    float one = 1;
    cublasStatus_t result = api->sgemm(
        blas, opA, opB, static_cast<int>(m), static_cast<int>(n),
        static_cast<int>(k), &one, a, static_cast<int>(lda), b,
        static_cast<int>(ldb), &beta, c, static_cast<int>(ldc));
    if (result != CUBLAS_STATUS_SUCCESS)
      return Status::error("cublasSgemm failed (status " +
                           std::to_string(static_cast<int>(result)) + ") for " +
                           std::to_string(m) + "x" + std::to_string(n) + "x" +
                           std::to_string(k));
    return Status::success();
  }

  /// The kernels' argument table, grown when a launch needs more.
  Status ensureArguments(size_t bytes) {
    if (bytes <= argumentBytes)
      return Status::success();
    if (arguments) {
      // The previous kernels may still read the old table.
      api->streamSynchronize(stream);
      api->memFree(arguments);
      arguments = 0;
    }
    if (api->memAlloc(&arguments, bytes) != CUDA_SUCCESS) {
      argumentBytes = 0;
      return Status::error("out of GPU memory for a kernel's arguments");
    }
    argumentBytes = bytes;
    return Status::success();
  }

  /// Room on the device for a gather's `count` row indices.
  bool ensureGatherRows(int64_t count) {
    if (count <= gatherRowCapacity)
      return true;
    if (gatherRowList) {
      api->streamSynchronize(stream);
      api->memFree(gatherRowList);
      gatherRowList = 0;
    }
    gatherRowCapacity = 0;
    if (api->memAlloc(&gatherRowList, size_t(count) * sizeof(int32_t)) !=
        CUDA_SUCCESS)
      return false;
    gatherRowCapacity = count;
    return true;
  }

  /// `rows` ones on the device (sumRows' right-hand side).
  const float *onesOfLength(int64_t rows) {
    if (rows > onesLength) {
      if (ones) {
        api->streamSynchronize(stream);
        api->memFree(ones);
        ones = 0;
      }
      if (api->memAlloc(&ones, rows * sizeof(float)) != CUDA_SUCCESS) {
        onesLength = 0;
        note(CUDA_ERROR_OUT_OF_MEMORY, "allocating a ones vector");
        return nullptr;
      }
      uint32_t bits;
      float one = 1.0f;
      std::memcpy(&bits, &one, sizeof bits);
      note(api->memsetD32Async(ones, bits, rows, stream), "memset on the GPU");
      onesLength = rows;
    }
    return reinterpret_cast<const float *>(ones);
  }

  /// Threads per row of the gather kernel: 4 floats each at H = 512.
  static constexpr unsigned kGatherLanes = 128;

  const Api *api = nullptr;
  CUmodule module = nullptr;
  /// The gather kernel's module; null where the driver could not load it
  /// (steps then gather row by row).
  CUmodule gatherModule = nullptr;
  CUfunction gatherKernel = nullptr;
  CUdeviceptr gatherRowList = 0;
  int64_t gatherRowCapacity = 0;
  CUstream stream = nullptr;
  cublasHandle_t blas = nullptr;
  std::vector<CUfunction> kernels;
  CUdeviceptr arguments = 0, ones = 0;
  size_t argumentBytes = 0;
  int64_t onesLength = 0;
  int64_t multiprocessors = 1;
  Status firstError;
};

Expected<std::shared_ptr<CudaDevice>>
CudaDevice::load(const Api &api, const Plan &plan, const std::string &ptx) {
  auto device = std::make_shared<CudaDevice>();
  device->api = &api;
  CUdevice gpu;
  int count = 0;
  if (api.deviceGet(&gpu, 0) == CUDA_SUCCESS &&
      api.deviceGetAttribute(&count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                             gpu) == CUDA_SUCCESS &&
      count > 0)
    device->multiprocessors = count;
  CUresult result = api.streamCreate(&device->stream, CU_STREAM_NON_BLOCKING);
  if (result != CUDA_SUCCESS)
    return Status::error(api.describe(result, "creating a stream"));
  if (api.blasCreate(&device->blas) != CUBLAS_STATUS_SUCCESS)
    return Status::error("cannot create a cuBLAS handle; use --device cpu");
  api.blasSetStream(device->blas, device->stream);
  if ((result = api.moduleLoadData(&device->module, ptx.c_str())) !=
      CUDA_SUCCESS)
    return Status::error(api.describe(result, "loading the PTX"));
  for (int64_t index = 0; index < plan.numKernelsUsed(); ++index) {
    std::string name = "cellc_" + plan.cellName + "_k" + std::to_string(index);
    CUfunction function;
    if ((result = api.moduleGetFunction(&function, device->module,
                                        name.c_str())) != CUDA_SUCCESS)
      return Status::error(api.describe(result, "kernel " + name));
    device->kernels.push_back(function);
  }
  if (api.moduleLoadData(&device->gatherModule, kGatherRowsPtx) ==
          CUDA_SUCCESS &&
      api.moduleGetFunction(&device->gatherKernel, device->gatherModule,
                            "cellrt_gather_rows") != CUDA_SUCCESS)
    device->gatherKernel = nullptr;
  return device;
}

} // namespace

Status cellrt::cuda::available() {
  Expected<const Api *> api = Api::get();
  return api ? Status::success() : api.getStatus();
}

Expected<Cell> cellrt::cuda::loadCell(const std::string &tables,
                                      const std::string &ptx) {
  Expected<const Api *> api = Api::get();
  if (!api)
    return api.getStatus();
  return loadCellWithApi(**api, tables, ptx);
}

Expected<Cell> cellrt::cuda::loadCellWithApi(const Api &api,
                                             const std::string &tables,
                                             const std::string &ptx) {
  Expected<Plan> plan = decodePlan(tables);
  if (!plan)
    return plan.getStatus();
  Expected<std::shared_ptr<CudaDevice>> device =
      CudaDevice::load(api, *plan, ptx);
  if (!device)
    return device.getStatus();
  std::vector<std::string> names;
  for (int64_t index = 0; index < (*device)->numKernels(); ++index)
    names.push_back("cellc_" + plan->cellName + "_k" + std::to_string(index));
  return Cell::create(std::move(*plan), std::move(*device), std::move(names));
}
