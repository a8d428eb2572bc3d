//===- cellrt/ThisThread.h - Kernels on the calling thread alone -*- C++
//-*-===//
//
// For programs that run independent jobs on threads of their own.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_THISTHREAD_H
#define CELLRT_THISTHREAD_H

namespace cellrt {

/// While one lives, what its thread runs through cellrt (the fused kernels,
/// tiled steps, parallelFor, bf16 products' rounding) runs on that thread
/// alone, and getNumThreads() reads 1 there, whatever setNumThreads says:
/// the thread decides as a one-thread process would, with the same bits.
/// Other threads are unaffected; scopes nest. For a program that runs
/// independent jobs side by side on threads of its own (`nmt translate
/// --threads N` decodes N batches at once), where splitting each job again
/// would only hand work back and forth between the same cores. oneDNN's
/// GEMMs follow OpenMP's setting instead: call omp_set_num_threads(1) on
/// the thread as well.
class KernelsOnThisThread {
public:
  KernelsOnThisThread();
  ~KernelsOnThisThread();
  KernelsOnThisThread(const KernelsOnThisThread &) = delete;
  KernelsOnThisThread &operator=(const KernelsOnThisThread &) = delete;

private:
  bool previous;
};

} // namespace cellrt

#endif // CELLRT_THISTHREAD_H
