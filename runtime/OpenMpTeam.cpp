//===- OpenMpTeam.cpp - OpenMP threads as the kernels' team -----------===//

#include "OpenMpTeam.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

using namespace cellrt::detail;

namespace {

struct Call {
  const std::function<void(int, int)> *member;
  int (*threadNum)();
  int (*numThreads)();
};

/// What GOMP_parallel runs on each member, as `#pragma omp parallel` would.
void runMember(void *data) {
  const Call &call = *static_cast<const Call *>(data);
  (*call.member)(call.threadNum(), call.numThreads());
}

template <typename Fn> Fn lookUp(const char *name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

} // namespace

const OpenMpTeam *OpenMpTeam::get() {
  static const OpenMpTeam *team = []() -> const OpenMpTeam * {
    const char *wanted = std::getenv("CELLRT_POOL");
    if (!wanted || std::strcmp(wanted, "openmp") != 0)
      return nullptr;
    static OpenMpTeam found;
    found.parallelFn = lookUp<ParallelFn>("GOMP_parallel");
    found.threadNumFn = lookUp<IndexFn>("omp_get_thread_num");
    found.numThreadsFn = lookUp<IndexFn>("omp_get_num_threads");
    found.barrierFn = lookUp<BarrierFn>("GOMP_barrier");
    bool complete = found.parallelFn && found.threadNumFn &&
                    found.numThreadsFn && found.barrierFn;
    return complete ? &found : nullptr;
  }();
  return team;
}

void OpenMpTeam::run(int threads,
                     const std::function<void(int, int)> &member) const {
  Call call{&member, threadNumFn, numThreadsFn};
  parallelFn(runMember, &call, unsigned(threads < 1 ? 1 : threads), 0);
}
