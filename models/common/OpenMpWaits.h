//===- models/common/OpenMpWaits.h - One thread team -----------*- C++ -*-===//
//
// oneDNN runs the layers' products on libgomp's OpenMP threads; cellrt's
// kernels and the layers' parallelFor run on cellrt's pool unless
// CELLRT_POOL=openmp puts them on the OpenMP team too. Two teams on the
// same cores hand work to each other through the kernel: libgomp's default
// lets an idle OpenMP thread spin for ~3 ms after each product, on the
// core a kernel thread needs next (17-27% of the samples of the Multi30k
// recipe at 2 threads), and with OMP_WAIT_POLICY=PASSIVE every hand-off
// sleeps and wakes instead (~900 context switches per update). One team,
// whose threads spin briefly (GOMP_SPINCOUNT=30000) and then sleep, trains
// the Multi30k models 1.0-1.18x faster at 2 threads than two sleeping
// teams, with the same losses (bench/README.md, "One thread team"). libgomp
// reads its variables once, when it loads, so a driver sets them by
// starting itself again.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_OPENMPWAITS_H
#define CELLC_MODELS_COMMON_OPENMPWAITS_H

namespace models {

/// Where OMP_WAIT_POLICY is unset or empty, sets it to PASSIVE, and
/// GOMP_SPINCOUNT to 30000 and CELLRT_POOL to openmp where those are unset,
/// and executes this program again with the same arguments (the same
/// process, so mpirun and the caller see nothing); returns only where
/// OMP_WAIT_POLICY was set already (the user's choices are kept) or the
/// program cannot be executed again, and then the process goes on under
/// libgomp's defaults and cellrt's own pool (or what the user set). Call it
/// first in main(), before any thread starts.
void useOneThreadTeam(char **argv);

} // namespace models

#endif
