//===- models/common/ThreadsHere.cpp - One thread's work alone ------------===//

#include "models/common/ThreadsHere.h"

#include <dlfcn.h>

namespace models {

namespace {

/// The OpenMP runtime that came with oneDNN, looked up rather than linked
/// (as setThreads does): its team size is a per-thread setting.
struct OpenMp {
  void (*set)(int) = reinterpret_cast<void (*)(int)>(
      dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  int (*get)() = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT,
                                                   "omp_get_max_threads"));
};

const OpenMp &openMp() {
  static const OpenMp api;
  return api;
}

} // namespace

OneThreadHere::OneThreadHere() {
  if (!openMp().set || !openMp().get)
    return;
  openMpBefore = openMp().get();
  openMp().set(1);
}

OneThreadHere::~OneThreadHere() {
  if (openMpBefore > 0)
    openMp().set(openMpBefore);
}

} // namespace models
