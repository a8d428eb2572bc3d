//===- CudaApi.h - The CUDA driver and cuBLAS, loaded at run time -*- C++ -*-===//
//
// cellrt's GPU backend never links libcuda or libcublas: it loads them with
// dlopen when a GPU run is asked for. Binaries built with the backend start
// and run on machines without a GPU or driver, and a GPU request there fails
// with a clear message instead of a loader error.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_CUDA_CUDAAPI_H
#define CELLRT_CUDA_CUDAAPI_H

#include "cellrt/Plan.h"
#include "cellrt/Runtime.h"

#include <cublas_v2.h>
#include <cuda.h>

namespace cellrt::cuda {

/// The entry points cellrt uses, resolved from libcuda.so.1 and libcublas.
struct Api {
  decltype(&::cuInit) init;
  decltype(&::cuDeviceGet) deviceGet;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute;
  decltype(&::cuDevicePrimaryCtxRetain) primaryContextRetain;
  decltype(&::cuCtxSetCurrent) contextSetCurrent;
  decltype(&::cuModuleLoadData) moduleLoadData;
  decltype(&::cuModuleUnload) moduleUnload;
  decltype(&::cuModuleGetFunction) moduleGetFunction;
  decltype(&::cuLaunchKernel) launchKernel;
  decltype(&::cuMemAlloc) memAlloc;
  decltype(&::cuMemFree) memFree;
  decltype(&::cuMemcpyHtoD) memcpyHtoD;
  decltype(&::cuMemcpyDtoH) memcpyDtoH;
  decltype(&::cuMemcpyDtoD) memcpyDtoD;
  decltype(&::cuMemsetD32) memsetD32;
  decltype(&::cuMemcpyHtoDAsync) memcpyHtoDAsync;
  decltype(&::cuMemcpyDtoHAsync) memcpyDtoHAsync;
  decltype(&::cuMemcpyDtoDAsync) memcpyDtoDAsync;
  decltype(&::cuMemsetD32Async) memsetD32Async;
  decltype(&::cuStreamCreate) streamCreate;
  decltype(&::cuStreamDestroy) streamDestroy;
  decltype(&::cuStreamSynchronize) streamSynchronize;
  decltype(&::cuGetErrorString) getErrorString;
  decltype(&::cublasCreate) blasCreate;
  decltype(&::cublasDestroy) blasDestroy;
  decltype(&::cublasSetStream) blasSetStream;
  decltype(&::cublasSgemm) sgemm;
  decltype(&::cublasSgemv) sgemv;
  decltype(&::cublasSaxpy) saxpy;

  /// The process-wide API with a current context on device 0, or the reason
  /// there is none ("no CUDA driver found (...); use --device cpu").
  static Expected<const Api *> get();

  /// `what: <driver's message>` for a failed driver call.
  std::string describe(CUresult result, const std::string &what) const;
};

/// cuda::loadCell with the driver and cuBLAS entry points in `api` (which
/// must outlive the cell); tests pass an emulation of them.
Expected<Cell> loadCellWithApi(const Api &api, const std::string &tables,
                               const std::string &ptx);

} // namespace cellrt::cuda

#endif // CELLRT_CUDA_CUDAAPI_H
