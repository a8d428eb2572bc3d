//===- CudaEmulationTest.cpp - The CUDA backend on an emulated driver -----===//
//
// No GPU exists here, so CudaDevice (memory, copies, the cuBLAS mappings of
// the plan's row-major products, bias sums, argument tables, launches) runs
// against an emulation of the driver and cuBLAS entry points it calls:
// column-major reference BLAS written from cuBLAS's documentation, device
// memory that starts as NaN and is checked on every access, and "PTX
// kernels" that are the CPU kernels of the same cell (cellc emits both from
// one kernel IR; they differ only in how rows are spread over threads).
// Every cell must then match the CPU backend, forward and backward.
//
//===----------------------------------------------------------------------===//

#include "CudaApi.h"
#include "cellrt/PlanTables.h"
#include "test/unit/CellRunner.h"

#include "atr.h"
#include "gru.h"
#include "lau.h"
#include "lstm.h"
#include "probed.h"
#include "ran.h"
#include "rnn.h"
#include "srnmt.h"
#include "sru.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

using namespace cellrt;
using namespace cellrt_test;

namespace {

/// The emulated GPU: its allocations, the kernels of the loaded "module",
/// and everything it saw that a real driver would reject.
struct Emulation {
  std::map<uintptr_t, size_t> live;
  std::map<std::string, cellrt_kernel_fn> kernels;
  std::vector<std::string> errors;
  int64_t launches = 0, gemms = 0, gemvs = 0, axpys = 0;

  bool inside(uintptr_t address, size_t bytes) const {
    auto it = live.upper_bound(address);
    if (it == live.begin())
      return false;
    --it;
    return address >= it->first && address + bytes <= it->first + it->second;
  }
  void check(uintptr_t address, size_t bytes, const char *what) {
    if (!inside(address, bytes))
      errors.push_back(std::string(what) + ": not device memory");
  }
  void check(const void *address, size_t bytes, const char *what) {
    check(reinterpret_cast<uintptr_t>(address), bytes, what);
  }
};

Emulation *emulation = nullptr;

// The driver API.
CUresult deviceGet(CUdevice *device, int) {
  *device = 0;
  return CUDA_SUCCESS;
}
CUresult deviceGetAttribute(int *value, CUdevice_attribute attribute,
                            CUdevice) {
  *value = attribute == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 108 : 0;
  return CUDA_SUCCESS;
}
CUresult streamCreate(CUstream *stream, unsigned) {
  static int token;
  *stream = reinterpret_cast<CUstream>(&token);
  return CUDA_SUCCESS;
}
CUresult streamDestroy(CUstream) { return CUDA_SUCCESS; }
CUresult streamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult moduleLoadData(CUmodule *module, const void *) {
  static int token;
  *module = reinterpret_cast<CUmodule>(&token);
  return CUDA_SUCCESS;
}
CUresult moduleUnload(CUmodule) { return CUDA_SUCCESS; }
CUresult moduleGetFunction(CUfunction *function, CUmodule, const char *name) {
  auto it = emulation->kernels.find(name);
  if (it == emulation->kernels.end())
    return CUDA_ERROR_NOT_FOUND;
  *function = reinterpret_cast<CUfunction>(&it->second);
  return CUDA_SUCCESS;
}
CUresult memAlloc(CUdeviceptr *pointer, size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  float *memory = static_cast<float *>(std::aligned_alloc(64, rounded));
  for (size_t i = 0; i < rounded / 4; ++i)
    memory[i] = std::numeric_limits<float>::quiet_NaN();
  *pointer = reinterpret_cast<CUdeviceptr>(memory);
  emulation->live[*pointer] = bytes;
  return CUDA_SUCCESS;
}
CUresult memFree(CUdeviceptr pointer) {
  if (!emulation->live.erase(pointer))
    emulation->errors.push_back("cuMemFree of memory not allocated");
  std::free(reinterpret_cast<void *>(pointer));
  return CUDA_SUCCESS;
}
CUresult memcpyHtoDAsync(CUdeviceptr target, const void *source, size_t bytes,
                         CUstream) {
  emulation->check(target, bytes, "cuMemcpyHtoDAsync target");
  if (emulation->inside(reinterpret_cast<uintptr_t>(source), 0))
    emulation->errors.push_back("cuMemcpyHtoDAsync from device memory");
  std::memcpy(reinterpret_cast<void *>(target), source, bytes);
  return CUDA_SUCCESS;
}
CUresult memcpyDtoHAsync(void *target, CUdeviceptr source, size_t bytes,
                         CUstream) {
  emulation->check(source, bytes, "cuMemcpyDtoHAsync source");
  if (emulation->inside(reinterpret_cast<uintptr_t>(target), 0))
    emulation->errors.push_back("cuMemcpyDtoHAsync into device memory");
  std::memcpy(target, reinterpret_cast<void *>(source), bytes);
  return CUDA_SUCCESS;
}
CUresult memcpyDtoDAsync(CUdeviceptr target, CUdeviceptr source, size_t bytes,
                         CUstream) {
  emulation->check(target, bytes, "cuMemcpyDtoDAsync target");
  emulation->check(source, bytes, "cuMemcpyDtoDAsync source");
  std::memmove(reinterpret_cast<void *>(target),
               reinterpret_cast<void *>(source), bytes);
  return CUDA_SUCCESS;
}
CUresult memsetD32Async(CUdeviceptr target, unsigned value, size_t count,
                        CUstream) {
  emulation->check(target, count * 4, "cuMemsetD32Async");
  auto *words = reinterpret_cast<uint32_t *>(target);
  for (size_t i = 0; i < count; ++i)
    words[i] = value;
  return CUDA_SUCCESS;
}
/// Runs the "PTX" kernel as the CPU kernel over its rows, after checking
/// that the grid covers them.
CUresult launchKernel(CUfunction function, unsigned gridX, unsigned gridY,
                      unsigned gridZ, unsigned blockX, unsigned blockY,
                      unsigned blockZ, unsigned, CUstream, void **parameters,
                      void **) {
  auto kernel = *reinterpret_cast<cellrt_kernel_fn *>(function);
  int64_t rowBegin = *static_cast<int64_t *>(parameters[0]);
  int64_t rowEnd = *static_cast<int64_t *>(parameters[1]);
  int64_t step = *static_cast<int64_t *>(parameters[2]);
  auto lengths = *static_cast<uint64_t *>(parameters[3]);
  auto dims = *static_cast<uint64_t *>(parameters[4]);
  auto pointers = *static_cast<uint64_t *>(parameters[5]);
  auto strides = *static_cast<uint64_t *>(parameters[6]);
  // One block of whole warps per row.
  if (int64_t(gridX) < rowEnd - rowBegin || gridY != 1 || gridZ != 1 ||
      blockY != 1 || blockZ != 1 || blockX % 32 != 0)
    emulation->errors.push_back("launch geometry does not cover the rows");
  if (lengths)
    emulation->check(lengths, 4, "kernel lengths");
  emulation->check(dims, 0, "kernel dims");
  emulation->check(pointers, 8, "kernel pointer table");
  emulation->check(strides, 8, "kernel stride table");
  ++emulation->launches;
  kernel(rowBegin, rowEnd, step, reinterpret_cast<const int32_t *>(lengths),
         reinterpret_cast<const int64_t *>(dims),
         reinterpret_cast<float *const *>(pointers),
         reinterpret_cast<const int64_t *>(strides));
  return CUDA_SUCCESS;
}
CUresult getErrorString(CUresult, const char **text) {
  *text = "emulated error";
  return CUDA_SUCCESS;
}

// cuBLAS, column-major, from its documentation: element (i, j) of an
// m x n matrix with leading dimension ld is at [i + j * ld].
cublasStatus_t blasCreate(cublasHandle_t *handle) {
  static int token;
  *handle = reinterpret_cast<cublasHandle_t>(&token);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t blasDestroy(cublasHandle_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t blasSetStream(cublasHandle_t, cudaStream_t) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t sgemm(cublasHandle_t, cublasOperation_t transA,
                     cublasOperation_t transB, int m, int n, int k,
                     const float *alpha, const float *A, int lda,
                     const float *B, int ldb, const float *beta, float *C,
                     int ldc) {
  // op(A) is m x k, op(B) is k x n; A is lda x (k or m), B ldb x (n or k).
  if (lda < (transA == CUBLAS_OP_N ? m : k) ||
      ldb < (transB == CUBLAS_OP_N ? k : n) || ldc < m)
    return CUBLAS_STATUS_INVALID_VALUE;
  emulation->check(A, 4, "sgemm A");
  emulation->check(B, 4, "sgemm B");
  emulation->check(C + (m - 1) + int64_t(n - 1) * ldc, 4, "sgemm C (last)");
  ++emulation->gemms;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int l = 0; l < k; ++l) {
        float a = transA == CUBLAS_OP_N ? A[i + int64_t(l) * lda]
                                        : A[l + int64_t(i) * lda];
        float b = transB == CUBLAS_OP_N ? B[l + int64_t(j) * ldb]
                                        : B[j + int64_t(l) * ldb];
        sum += double(a) * b;
      }
      float &c = C[i + int64_t(j) * ldc];
      // beta = 0: C is not read (it may hold anything, NaN included).
      c = float(*alpha * sum + (*beta == 0 ? 0.0 : double(*beta) * c));
    }
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t sgemv(cublasHandle_t, cublasOperation_t trans, int m, int n,
                     const float *alpha, const float *A, int lda,
                     const float *x, int incx, const float *beta, float *y,
                     int incy) {
  if (trans != CUBLAS_OP_N || lda < m)
    return CUBLAS_STATUS_INVALID_VALUE;
  emulation->check(A, 4, "sgemv A");
  emulation->check(x, int64_t(n) * 4, "sgemv x");
  emulation->check(y, int64_t(m) * 4, "sgemv y");
  ++emulation->gemvs;
  for (int i = 0; i < m; ++i) {
    double sum = 0;
    for (int j = 0; j < n; ++j)
      sum += double(A[i + int64_t(j) * lda]) * x[int64_t(j) * incx];
    float &value = y[int64_t(i) * incy];
    value = float(*alpha * sum + (*beta == 0 ? 0.0 : double(*beta) * value));
  }
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t saxpy(cublasHandle_t, int n, const float *alpha,
                     const float *x, int incx, float *y, int incy) {
  emulation->check(x, int64_t(n) * 4, "saxpy x");
  emulation->check(y, int64_t(n) * 4, "saxpy y");
  ++emulation->axpys;
  for (int i = 0; i < n; ++i)
    y[int64_t(i) * incy] += *alpha * x[int64_t(i) * incx];
  return CUBLAS_STATUS_SUCCESS;
}

cuda::Api emulatedApi() {
  cuda::Api api{};
  api.deviceGet = deviceGet;
  api.deviceGetAttribute = deviceGetAttribute;
  api.moduleLoadData = moduleLoadData;
  api.moduleUnload = moduleUnload;
  api.moduleGetFunction = moduleGetFunction;
  api.launchKernel = launchKernel;
  api.memAlloc = memAlloc;
  api.memFree = memFree;
  api.memcpyHtoDAsync = memcpyHtoDAsync;
  api.memcpyDtoHAsync = memcpyDtoHAsync;
  api.memcpyDtoDAsync = memcpyDtoDAsync;
  api.memsetD32Async = memsetD32Async;
  api.streamCreate = streamCreate;
  api.streamDestroy = streamDestroy;
  api.streamSynchronize = streamSynchronize;
  api.getErrorString = getErrorString;
  api.blasCreate = blasCreate;
  api.blasDestroy = blasDestroy;
  api.blasSetStream = blasSetStream;
  api.sgemm = sgemm;
  api.sgemv = sgemv;
  api.saxpy = saxpy;
  return api;
}

void expectCloseResults(const Results &actual, const Results &expected) {
  ASSERT_EQ(actual.arrays.size(), expected.arrays.size());
  for (size_t i = 0; i < actual.arrays.size(); ++i) {
    ASSERT_EQ(actual.arrays[i].size(), expected.arrays[i].size());
    for (size_t j = 0; j < actual.arrays[i].size(); ++j) {
      float a = actual.arrays[i][j], e = expected.arrays[i][j];
      // Different summation orders (reference BLAS vs oneDNN) only.
      ASSERT_NEAR(a, e, 1e-5f * (1 + std::fabs(e)))
          << "array " << i << " element " << j;
    }
  }
}

void expectSameAsCpu(cellrt_image image) {
  Emulation state;
  emulation = &state;
  for (int64_t k = 0; k < image.num_kernels; ++k)
    state.kernels["cellc_" + std::string(decodePlanImage(image.plan)->cellName) +
                  "_k" + std::to_string(k)] = image.kernels[k];
  static const cuda::Api api = emulatedApi();
  {
    Expected<Cell> onCpu = Cell::load(image);
    ASSERT_TRUE(onCpu.ok()) << onCpu.error();
    Expected<Cell> onGpu = cuda::loadCellWithApi(
        api, std::string(image.plan, planTablesSize(image.plan)), "PTX");
    ASSERT_TRUE(onGpu.ok()) << onGpu.error();
    Problem problem(onCpu->getPlan(), 11);
    for (bool reverse : {false, true})
      for (bool train : {false, true}) {
        if (train && !onCpu->hasBackward())
          continue;
        SCOPED_TRACE(std::string(reverse ? "reverse" : "forward") +
                     (train ? ", training" : ", inference"));
        Results expected = run(*onCpu, problem, reverse, train);
        // Host arrays twice (the second call reuses the device's memory),
        // then arrays in device memory (Memory::Device), used in place.
        for (int call = 0; call < 3; ++call)
          expectCloseResults(run(*onGpu, problem, reverse, train, nullptr,
                                 nullptr,
                                 call < 2 ? Memory::Host : Memory::Device),
                             expected);
      }
  }
  EXPECT_TRUE(state.errors.empty())
      << state.errors.size() << " errors, first: " << state.errors[0];
  EXPECT_TRUE(state.live.empty()) << "device memory leaked";
  EXPECT_GT(state.launches, 0);
  EXPECT_GT(state.gemms, 0);
  emulation = nullptr;
}

} // namespace

#define EMULATED_GPU_TEST(Name, name)                                          \
  TEST(CudaDeviceEmulated, Name) { expectSameAsCpu(cellc_##name##_image()); }

EMULATED_GPU_TEST(Atr, atr)
EMULATED_GPU_TEST(Gru, gru)
EMULATED_GPU_TEST(Lstm, lstm)
EMULATED_GPU_TEST(Ran, ran)
EMULATED_GPU_TEST(Lau, lau)
EMULATED_GPU_TEST(Sru, sru)
EMULATED_GPU_TEST(Srnmt, srnmt)
EMULATED_GPU_TEST(Rnn, rnn)
EMULATED_GPU_TEST(Probed, probed) // an LSTM compiled with --probe i,f,o
