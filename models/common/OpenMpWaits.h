//===- models/common/OpenMpWaits.h - Sleeping OpenMP threads ----*- C++ -*-===//
//
// The drivers' processes run two thread teams: oneDNN's OpenMP threads for
// the layers' products and cellrt's kernel pool. libgomp's default lets an
// idle OpenMP thread spin for a while after each product, on the core a
// kernel thread needs next; on the Multi30k recipe at 2 threads that
// spinning took 17-27% of the samples, and OMP_WAIT_POLICY=PASSIVE made
// training 9-17% faster (models/nmt/README.md). libgomp reads the variable
// once, when it loads, so a driver sets it by starting itself again.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_OPENMPWAITS_H
#define CELLC_MODELS_COMMON_OPENMPWAITS_H

namespace models {

/// Where OMP_WAIT_POLICY is unset or empty, sets it to PASSIVE and executes
/// this program again with the same arguments (the same process, so mpirun and
/// the caller see nothing); returns only where the variable was set already
/// (the user's choice is kept) or the program cannot be executed again, and
/// then the process goes on under libgomp's default. Call it first in
/// main(), before any thread starts.
void preferSleepingOpenMpThreads(char **argv);

} // namespace models

#endif
