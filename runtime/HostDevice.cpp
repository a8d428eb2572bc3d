//===- HostDevice.cpp - Plans on the CPU: kernels as functions ------------===//

#include "HostDevice.h"
#include "Gemm.h"
#include "Parallel.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace cellrt;
using namespace cellrt::detail;

Device::~Device() = default;

void *HostDevice::allocate(size_t bytes) {
  // 64-byte aligned like oneDNN's own buffers; rows of kernels vectorise.
  return std::aligned_alloc(64, (bytes + 63) / 64 * 64);
}

void HostDevice::release(void *memory) { std::free(memory); }

void HostDevice::upload(void *device, const void *host, size_t bytes) {
  if (device != host && bytes)
    std::memcpy(device, host, bytes);
}

void HostDevice::download(void *host, const void *device, size_t bytes) {
  if (device != host && bytes)
    std::memcpy(host, device, bytes);
}

void HostDevice::copy(void *target, const void *source, size_t bytes) {
  if (target != source && bytes)
    std::memmove(target, source, bytes);
}

/// Zeroing and bias sums run over tens of megabytes in training (the
/// backward-only buffers, every row of a gradient): one thread reaches half
/// the machine's bandwidth, and at 2 threads they were most of what did not
/// scale in SRU's training. Chunks of whole cache lines; the result does
/// not depend on the split.
constexpr int64_t kChunkFloats = 16 * 1024;

void HostDevice::zero(float *target, int64_t count) {
  if (count <= 0)
    return;
  // A float zeroed costs far less than a kernel's element: split only from
  // ~1 MB on (a step's state gradient, 128 KB, stays on this thread).
  parallelRows((count + kChunkFloats - 1) / kChunkFloats, count / 16,
               [&](int64_t begin, int64_t end) {
                 int64_t first = begin * kChunkFloats;
                 int64_t last = std::min(count, end * kChunkFloats);
                 std::memset(target + first, 0, (last - first) * sizeof(float));
               });
}

void HostDevice::accumulate(float *target, const float *source,
                            int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    target[i] += source[i];
}

void HostDevice::sumRows(const float *source, int64_t rows, int64_t stride,
                         int64_t length, float *target) {
  // Summed in double, each column over the rows in order: a bias gradient
  // adds up T*B rows. Threads take column ranges of whole cache lines.
  constexpr int64_t kLineFloats = 16;
  int64_t lines = (length + kLineFloats - 1) / kLineFloats;
  parallelRows(lines, rows * length, [&](int64_t begin, int64_t end) {
    int64_t first = begin * kLineFloats;
    int64_t last = std::min(length, end * kLineFloats);
    std::vector<double> sums(last - first, 0.0);
    for (int64_t row = 0; row < rows; ++row) {
      const float *values = source + row * stride + first;
      for (int64_t j = 0; j < last - first; ++j)
        sums[j] += values[j];
    }
    for (int64_t j = first; j < last; ++j)
      target[j] += static_cast<float>(sums[j - first]);
  });
}

Status HostDevice::gemmTransposedWeight(int64_t rows, int64_t n, int64_t k,
                                        const float *in, int64_t inStride,
                                        const float *weight,
                                        int64_t weightStride, float *out,
                                        int64_t outStride) {
  if (productPrecision == Precision::BF16)
    return gemmBf16(false, true, rows, n, k, in, inStride, weight, weightStride,
                    out, outStride, 0.0f);
  return detail::gemmTransposedWeight(rows, n, k, in, inStride, weight,
                                      weightStride, out, outStride);
}

Status HostDevice::gemmAccumulate(int64_t rows, int64_t n, int64_t k,
                                  const float *in, int64_t inStride,
                                  const float *weight, int64_t weightStride,
                                  float *out, int64_t outStride) {
  if (productPrecision == Precision::BF16)
    return gemmBf16(/*transposeA=*/false, /*transposeB=*/false, rows, n, k, in,
                    inStride, weight, weightStride, out, outStride, 1.0f);
  return detail::gemmAccumulate(rows, n, k, in, inStride, weight,
                                weightStride, out, outStride);
}

bool HostDevice::multipliesBy(const PackedProduct &packed,
                              PackedProduct::Use use, int64_t weightRows,
                              int64_t weightCols) const {
  // Weights packed by a cell of the other precision, for the other
  // direction or of another shape multiply as plain ones.
  return packed.precision() == productPrecision && packed.use() == use &&
         packed.n() == weightRows && packed.k() == weightCols;
}

Status HostDevice::gemmPacked(int64_t rows, int64_t n, int64_t k,
                              const float *in, int64_t inStride,
                              const float *weight, int64_t weightStride,
                              const PackedProduct &packed, float *out,
                              int64_t outStride) {
  if (multipliesBy(packed, PackedProduct::Use::Forward, n, k))
    if (std::optional<Status> done =
            packed.tryMultiply(rows, in, inStride, out, outStride))
      return *done;
  return gemmTransposedWeight(rows, n, k, in, inStride, weight, weightStride,
                              out, outStride);
}

Status HostDevice::gemmAccumulatePacked(int64_t rows, int64_t n, int64_t k,
                                        const float *in, int64_t inStride,
                                        const float *weight,
                                        int64_t weightStride,
                                        const PackedProduct &packed, float *out,
                                        int64_t outStride) {
  // The weight is [k, n] here: packed as pack(weight, k, n, ..., Backward).
  if (multipliesBy(packed, PackedProduct::Use::Backward, k, n))
    if (std::optional<Status> done =
            packed.tryMultiply(rows, in, inStride, out, outStride))
      return *done;
  return gemmAccumulate(rows, n, k, in, inStride, weight, weightStride, out,
                        outStride);
}

Status HostDevice::gemmAccumulateTransposedInput(
    int64_t m, int64_t n, int64_t k, const float *a, int64_t aStride,
    const float *b, int64_t bStride, float *out, int64_t outStride) {
  if (productPrecision == Precision::BF16)
    return gemmBf16(/*transposeA=*/true, /*transposeB=*/false, m, n, k, a,
                    aStride, b, bStride, out, outStride, 1.0f);
  return detail::gemmAccumulateTransposedInput(m, n, k, a, aStride, b, bStride,
                                               out, outStride);
}

namespace {

/// One thread's scratch for the kernels it runs: grown to the widest call,
/// kept for the thread's life, so a step allocates nothing.
class ThreadScratch {
  /// Beyond this many floats, byte counts overflow.
  static constexpr int64_t kMaxFloats = INT64_MAX / 8;

public:
  ~ThreadScratch() { std::free(buffer); }

  /// The kernel's arguments with this thread's scratch appended (row stride
  /// 0); false when the memory cannot be had.
  bool bind(const KernelLaunch &call) {
    // Slots start on 64-byte lines, as the kernels' vector loads assume.
    auto rounded = [](int64_t length) { return (length + 15) / 16 * 16; };
    int64_t total = 0;
    for (int64_t length : *call.scratchLengths) {
      if (length < 0 || length > kMaxFloats - total - 16)
        return false;
      total += rounded(length);
    }
    if (!reserve(total))
      return false;
    pointers.assign(call.pointers->begin(), call.pointers->end());
    strides.assign(call.strides->begin(), call.strides->end());
    int64_t offset = 0;
    for (int64_t length : *call.scratchLengths) {
      pointers.push_back(buffer + offset);
      strides.push_back(0);
      offset += rounded(length);
    }
    return true;
  }

  std::vector<float *> pointers;
  std::vector<int64_t> strides;

private:
  bool reserve(int64_t floats) {
    if (floats <= capacity)
      return true;
    auto *grown = static_cast<float *>(
        std::aligned_alloc(64, (floats * 4 + 63) / 64 * 64));
    if (!grown)
      return false;
    std::free(buffer);
    buffer = grown;
    capacity = floats;
    return true;
  }

  float *buffer = nullptr;
  int64_t capacity = 0;
};

} // namespace

Status HostDevice::launch(const KernelLaunch &call) {
  cellrt_kernel_fn kernel = kernels[call.kernel];
  if (!call.scratchLengths || call.scratchLengths->empty()) {
    float **pointers = call.pointers->data();
    int64_t *strides = call.strides->data();
    parallelRows(call.rowEnd - call.rowBegin, call.work,
                 [&](int64_t begin, int64_t end) {
                   kernel(call.rowBegin + begin, call.rowBegin + end,
                          call.step, call.lengths, call.dims, pointers,
                          strides);
                 });
    return Status::success();
  }
  std::atomic<bool> outOfMemory{false};
  parallelRows(call.rowEnd - call.rowBegin, call.work,
               [&](int64_t begin, int64_t end) {
                 thread_local ThreadScratch scratch;
                 if (!scratch.bind(call)) {
                   outOfMemory = true;
                   return;
                 }
                 kernel(call.rowBegin + begin, call.rowBegin + end, call.step,
                        call.lengths, call.dims, scratch.pointers.data(),
                        scratch.strides.data());
               });
  if (!outOfMemory)
    return Status::success();
  uint64_t floats = 0;
  for (int64_t length : *call.scratchLengths)
    floats += static_cast<uint64_t>(length);
  return Status::error("out of memory: kernel " + std::to_string(call.kernel) +
                       " needs " + std::to_string(floats) +
                       " floats of scratch per thread");
}
