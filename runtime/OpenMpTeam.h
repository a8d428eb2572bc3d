//===- OpenMpTeam.h - OpenMP threads as the kernels' team -------*- C++ -*-===//
//
// oneDNN's products run on libgomp's OpenMP threads. A driver whose layers
// alternate products with element-wise work (the NMT models: a product,
// a kernel, an attention pass, the next product) would otherwise hand work
// between two teams on the same cores: cellrt's pool and OpenMP's, each
// woken through the kernel for a few microseconds of work. With
// CELLRT_POOL=openmp, cellrt's parallel calls run on the OpenMP team too,
// so that one team, spinning briefly between calls (GOMP_SPINCOUNT), takes
// every hand-off; bench/README.md ("One thread team") has the measurement.
// libgomp is found through dlsym, as oneDNN has loaded it: cellrt builds no
// OpenMP code of its own.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_OPENMPTEAM_H
#define CELLRT_OPENMPTEAM_H

#include <functional>

namespace cellrt::detail {

class OpenMpTeam {
public:
  /// The team when CELLRT_POOL is `openmp` and libgomp is loaded, else null
  /// (decided once).
  static const OpenMpTeam *get();

  /// Runs member(index, size) on every member of a team of at most
  /// `threads` (the calling thread is member 0). OpenMP may give fewer
  /// (inside another parallel region: one), so callers split work by
  /// `size`, not by `threads`.
  void run(int threads, const std::function<void(int, int)> &member) const;
  /// Waits for every member of the running team; only inside run().
  void barrier() const { barrierFn(); }

private:
  using ParallelFn = void (*)(void (*)(void *), void *, unsigned, unsigned);
  using IndexFn = int (*)();
  using BarrierFn = void (*)();
  ParallelFn parallelFn = nullptr;
  IndexFn threadNumFn = nullptr, numThreadsFn = nullptr;
  BarrierFn barrierFn = nullptr;
};

} // namespace cellrt::detail

#endif // CELLRT_OPENMPTEAM_H
