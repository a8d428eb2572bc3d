//===- OneDnn.h - What cellrt's oneDNN products share -----------*- C++ -*-===//
//
// The CPU engine, row-major memory descriptions, error text and the OpenMP
// team size of a product, for the f32 products (Gemm.cpp) and the bfloat16
// ones (GemmBf16.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_ONEDNN_H
#define CELLRT_ONEDNN_H

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <dlfcn.h>
#include <string>

namespace cellrt::detail {

/// A product of fewer flops (about 12 µs on one core here) runs on the
/// calling thread alone: waking OpenMP's sleeping threads for it costs more
/// than sharing it saves. A decoding step of B=1 at 2 threads took GRU
/// (products of 0.5-1.6 MFLOP) 307-314 µs and ATR 57-61 with every
/// product shared, 213-216 and 44 alone. At 4 MFLOP LSTM's and LAU's B=1
/// steps (2.1-2.6 MFLOP) lost up to 10%; B=10's (16 MFLOP and up) gain
/// from 2 threads.
constexpr double kMinSharedFlops = 2e6;

/// The same for a product by a weight packed for oneDNN's matmul, which
/// gains less from a second thread: at a B=10 step on 2 threads GRU's
/// products (5-16 MFLOP) took 420-436 µs shared and 350 alone, LSTM's (21
/// MFLOP) 448-479 shared and 552 alone.
constexpr double kMinSharedPackedFlops = 16e6;

/// The OpenMP runtime oneDNN loaded, found by name, so that cellrt never
/// brings in a second one.
struct OpenMPApi {
  void (*set)(int) = reinterpret_cast<void (*)(int)>(
      dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  int (*get)() = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT,
                                                   "omp_get_max_threads"));
};

inline const OpenMPApi &openMP() {
  static const OpenMPApi api;
  return api;
}

/// The team a product started now on this thread would get. oneDNN fixes a
/// primitive's team when it makes the primitive, so caches of primitives
/// key on it.
inline int currentThreads() { return openMP().get ? openMP().get() : 1; }

/// Sets OpenMP's team size for the products started (and the primitives
/// made) on this thread until it goes out of scope. Measured with libgomp
/// (Debian's oneDNN); LLVM's libomp re-forms its hot team when the size
/// changes, which may move the threshold.
class OpenMPThreads {
public:
  explicit OpenMPThreads(double flops, double minShared = kMinSharedFlops) {
    const OpenMPApi &api = openMP();
    if (flops >= minShared || !api.set || !api.get)
      return;
    set = api.set;
    saved = api.get();
    if (saved > 1)
      set(1);
  }
  OpenMPThreads(const OpenMPThreads &) = delete;
  OpenMPThreads &operator=(const OpenMPThreads &) = delete;
  ~OpenMPThreads() {
    if (saved > 1)
      set(saved);
  }

private:
  void (*set)(int) = nullptr;
  int saved = 0;
};

inline double flopsOf(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) *
         static_cast<double>(k);
}

inline dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// A [rows, columns] matrix of `type` whose rows are `stride` elements
/// apart.
inline dnnl::memory::desc
rowMajor(int64_t rows, int64_t columns, int64_t stride,
         dnnl::memory::data_type type = dnnl::memory::data_type::f32) {
  return dnnl::memory::desc({rows, columns}, type,
                            dnnl::memory::dims{stride, 1});
}

inline std::string describe(const dnnl::error &error) {
  return std::string(error.what()) + " (status " +
         std::to_string(static_cast<int>(error.status)) + ")";
}

} // namespace cellrt::detail

#endif // CELLRT_ONEDNN_H
