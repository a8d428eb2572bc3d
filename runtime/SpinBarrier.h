//===- SpinBarrier.h - A team's meeting point between steps -----*- C++ -*-===//

#ifndef CELLRT_SPINBARRIER_H
#define CELLRT_SPINBARRIER_H

#include <atomic>
#include <cstdint>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace cellrt::detail {

/// A generation-count barrier that spins (a step takes tens of
/// microseconds) and yields once a member is late, so that a descheduled
/// member on a loaded machine does not stall the rest for its time slice.
class SpinBarrier {
public:
  explicit SpinBarrier(int64_t size) : size(size) {}
  void wait() {
    int64_t generation = phase.load(std::memory_order_acquire);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) == size - 1) {
      arrived.store(0, std::memory_order_relaxed);
      phase.fetch_add(1, std::memory_order_release);
      return;
    }
    for (int spins = 0; phase.load(std::memory_order_acquire) == generation;
         ++spins) {
      if (spins < kSpins)
        pause();
      else
        std::this_thread::yield();
    }
  }

private:
  static constexpr int kSpins = 2000;
  static void pause() {
#if defined(__x86_64__)
    _mm_pause();
#endif
  }
  const int64_t size;
  std::atomic<int64_t> arrived{0}, phase{0};
};

} // namespace cellrt::detail

#endif // CELLRT_SPINBARRIER_H
