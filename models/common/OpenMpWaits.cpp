//===- models/common/OpenMpWaits.cpp - Sleeping OpenMP threads ------------===//

#include "models/common/OpenMpWaits.h"

#include <cstdlib>
#include <unistd.h>

void models::preferSleepingOpenMpThreads(char **argv) {
  // libgomp takes an empty value for its default, and so does this.
  const char *policy = std::getenv("OMP_WAIT_POLICY");
  if (policy && *policy)
    return;
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0)
    return;
  // The variable stays set, so the second start returns above. Where
  // /proc is missing the exec fails and this start goes on as it is.
  execv("/proc/self/exe", argv);
}
