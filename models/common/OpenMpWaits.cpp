//===- models/common/OpenMpWaits.cpp - One thread team ------------------===//

#include "models/common/OpenMpWaits.h"

#include <cstdlib>
#include <unistd.h>

void models::useOneThreadTeam(char **argv) {
  // libgomp takes an empty value for its default, and so does this.
  const char *policy = std::getenv("OMP_WAIT_POLICY");
  if (policy && *policy)
    return;
  // About 0.3 ms by libgomp's own estimate (100,000 spins per ms): enough
  // to catch the next product or kernel of an update, short enough that an
  // idle team leaves the cores at once.
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0 ||
      setenv("GOMP_SPINCOUNT", "30000", /*overwrite=*/0) != 0 ||
      setenv("CELLRT_POOL", "openmp", /*overwrite=*/0) != 0)
    return;
  // The variable stays set, so the second start returns above. Where
  // /proc is missing the exec fails and this start goes on as it is.
  execv("/proc/self/exe", argv);
}
