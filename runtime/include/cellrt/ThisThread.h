//===- cellrt/ThisThread.h - One thread's calls alone -----------*- C++ -*-===//
//
// For programs that run independent jobs on threads of their own.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_THISTHREAD_H
#define CELLRT_THISTHREAD_H

namespace cellrt {

/// While one lives, what its thread runs through cellrt runs on that
/// thread alone: the fused kernels, tiled steps, parallelFor and bf16
/// rounding (cellrt's pool), and the products (the thread's OpenMP team
/// size, which oneDNN follows, is 1, restored after); getNumThreads()
/// reads 1 there, whatever setNumThreads says, so the thread decides as a
/// one-thread process would, with the same bits. Other threads are
/// unaffected; scopes nest. For a program that runs independent jobs side
/// by side on threads of its own (`nmt translate --threads N` decodes N
/// batches at once), where splitting each job again would only hand work
/// back and forth between the same cores.
class KernelsOnThisThread {
public:
  KernelsOnThisThread();
  ~KernelsOnThisThread();
  KernelsOnThisThread(const KernelsOnThisThread &) = delete;
  KernelsOnThisThread &operator=(const KernelsOnThisThread &) = delete;

private:
  bool previous;
  /// This thread's OpenMP team size before (0: no OpenMP runtime).
  int openMpBefore = 0;
};

} // namespace cellrt

#endif // CELLRT_THISTHREAD_H
