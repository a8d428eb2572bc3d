//===- CudaApi.cpp - The CUDA driver and cuBLAS, loaded at run time -------===//

#include "CudaApi.h"

#include <dlfcn.h>
#include <mutex>

using namespace cellrt;
using namespace cellrt::cuda;

namespace {

/// Resolves `symbol` from `library` into `slot`; false with `error` set.
template <typename Function>
bool resolve(void *library, const char *symbol, Function &slot,
             std::string &error) {
  slot = reinterpret_cast<Function>(dlsym(library, symbol));
  if (!slot)
    error = std::string("missing symbol ") + symbol;
  return slot != nullptr;
}

void *openFirst(std::initializer_list<const char *> names, std::string &error) {
  for (const char *name : names)
    if (void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL))
      return library;
  const char *reason = dlerror();
  error = reason ? reason : "not found";
  return nullptr;
}

Expected<const Api *> load() {
  static Api api;
  std::string error;
  void *driver = openFirst({"libcuda.so.1", "libcuda.so"}, error);
  if (!driver)
    return Status::error("no CUDA driver found (" + error +
                         "); use --device cpu");
  bool ok = resolve(driver, "cuInit", api.init, error) &&
            resolve(driver, "cuDeviceGet", api.deviceGet, error) &&
            resolve(driver, "cuDeviceGetAttribute", api.deviceGetAttribute,
                    error) &&
            resolve(driver, "cuDevicePrimaryCtxRetain",
                    api.primaryContextRetain, error) &&
            resolve(driver, "cuCtxSetCurrent", api.contextSetCurrent, error) &&
            resolve(driver, "cuModuleLoadData", api.moduleLoadData, error) &&
            resolve(driver, "cuModuleUnload", api.moduleUnload, error) &&
            resolve(driver, "cuModuleGetFunction", api.moduleGetFunction,
                    error) &&
            resolve(driver, "cuLaunchKernel", api.launchKernel, error) &&
            resolve(driver, "cuMemAlloc_v2", api.memAlloc, error) &&
            resolve(driver, "cuMemFree_v2", api.memFree, error) &&
            resolve(driver, "cuMemcpyHtoD_v2", api.memcpyHtoD, error) &&
            resolve(driver, "cuMemcpyDtoH_v2", api.memcpyDtoH, error) &&
            resolve(driver, "cuMemcpyDtoD_v2", api.memcpyDtoD, error) &&
            resolve(driver, "cuMemsetD32_v2", api.memsetD32, error) &&
            resolve(driver, "cuMemcpyHtoDAsync_v2", api.memcpyHtoDAsync,
                    error) &&
            resolve(driver, "cuMemcpyDtoHAsync_v2", api.memcpyDtoHAsync,
                    error) &&
            resolve(driver, "cuMemcpyDtoDAsync_v2", api.memcpyDtoDAsync,
                    error) &&
            resolve(driver, "cuMemsetD32Async", api.memsetD32Async, error) &&
            resolve(driver, "cuStreamCreate", api.streamCreate, error) &&
            resolve(driver, "cuStreamDestroy_v2", api.streamDestroy, error) &&
            resolve(driver, "cuStreamSynchronize", api.streamSynchronize,
                    error) &&
            resolve(driver, "cuGetErrorString", api.getErrorString, error);
  if (!ok)
    return Status::error("the CUDA driver is unusable (" + error +
                         "); use --device cpu");
  void *blas = openFirst({"libcublas.so.13", "libcublas.so.12",
                          "libcublas.so.11", "libcublas.so"},
                         error);
  if (!blas)
    return Status::error("cuBLAS not found (" + error +
                         "); install the CUDA toolkit or use --device cpu");
  ok = resolve(blas, "cublasCreate_v2", api.blasCreate, error) &&
       resolve(blas, "cublasDestroy_v2", api.blasDestroy, error) &&
       resolve(blas, "cublasSetStream_v2", api.blasSetStream, error) &&
       resolve(blas, "cublasSgemm_v2", api.sgemm, error) &&
       resolve(blas, "cublasSgemv_v2", api.sgemv, error) &&
       resolve(blas, "cublasSaxpy_v2", api.saxpy, error);
  if (!ok)
    return Status::error("cuBLAS is unusable (" + error + ")");

  CUresult result = api.init(0);
  if (result != CUDA_SUCCESS)
    return Status::error(api.describe(result, "no usable GPU: cuInit") +
                         "; use --device cpu");
  CUdevice device;
  CUcontext context;
  if ((result = api.deviceGet(&device, 0)) != CUDA_SUCCESS ||
      (result = api.primaryContextRetain(&context, device)) != CUDA_SUCCESS ||
      (result = api.contextSetCurrent(context)) != CUDA_SUCCESS)
    return Status::error(api.describe(result, "cannot use GPU 0") +
                         "; use --device cpu");
  return static_cast<const Api *>(&api);
}

} // namespace

Expected<const Api *> Api::get() {
  static std::once_flag once;
  static Expected<const Api *> api = Status::error("not loaded");
  std::call_once(once, [] { api = load(); });
  return api;
}

std::string Api::describe(CUresult result, const std::string &what) const {
  const char *message = nullptr;
  if (getErrorString)
    getErrorString(result, &message);
  return what + ": " + (message ? message : "CUDA error " +
                                                std::to_string(result));
}
