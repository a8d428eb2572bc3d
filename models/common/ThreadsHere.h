//===- models/common/ThreadsHere.h - One thread's work alone ----*- C++ -*-===//
//
// For jobs that a driver runs side by side on threads of its own.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_THREADSHERE_H
#define CELLC_MODELS_COMMON_THREADSHERE_H

#include "cellrt/ThisThread.h"

namespace models {

/// While one lives, its thread runs its products (oneDNN's OpenMP team of
/// this thread), cells' kernels and layers (cellrt's pool) alone, as a
/// one-thread process would and with its bits, whatever `--threads` set
/// for the process: for jobs run side by side on threads of their own,
/// each of which would otherwise split its products again across the
/// same cores. Create it on the thread it is for.
class OneThreadHere {
public:
  OneThreadHere();
  ~OneThreadHere();
  OneThreadHere(const OneThreadHere &) = delete;
  OneThreadHere &operator=(const OneThreadHere &) = delete;

private:
  cellrt::KernelsOnThisThread kernels;
  /// This thread's OpenMP team size before, restored after (0: none).
  int openMpBefore = 0;
};

} // namespace models

#endif
