//===- Bench.h - Workloads and implementations of the benchmarks -*- C++ -*-===//
//
// One workload is a cell, a mode (inference forward over a sequence, forward
// + backward over a sequence, or one decoding step), the sizes and a thread
// count. Every implementation (cellc, the GEMM floor, oneDNN's RNN
// primitive, LibTorch eager / nn) makes a Runner for a workload: the
// constructor allocates and initialises everything the caller would own
// (params, inputs, gradient arrays) and creates whatever the implementation
// creates once (loaded cells, primitives); run() is one timed iteration.
//
// The driver (Driver.cpp) runs every workload in its own child process so
// that its peak memory can be measured alone.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_BENCH_BENCH_H
#define CELLC_BENCH_BENCH_H

#include "cellrt/Kernel.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace cellrt {
class Cell;
enum class Memory;
} // namespace cellrt

namespace cellc_bench {

enum class Mode { Forward, Training, Step };

struct Workload {
  std::string cell;
  Mode mode = Mode::Forward;
  int64_t T = 50, B = 64, I = 512, H = 512;
  int threads = 1;
  /// Decoding steps per run() in Step mode (one step is too short to time).
  int64_t stepsPerRun = 100;
};

const char *modeName(Mode mode);

class Runner {
public:
  virtual ~Runner() = default;
  /// One timed iteration.
  virtual void run() = 0;
  /// The GEMM flops of the last run(), where the runner counts them (the
  /// floor), else a negative number.
  virtual double gemmFlops() const { return -1; }
  /// The bytes an element-wise scan must move per run() (CellShape's
  /// scanFloats*), where the runner knows them (the floor), else negative.
  virtual double scanBytes() const { return -1; }
};

/// Makes the runner of one implementation, or null when it does not cover
/// the workload; `why` says why.
using Factory =
    std::function<std::unique_ptr<Runner>(const Workload &, std::string &why)>;

struct Implementation {
  std::string name;
  Factory make;
  /// Sets the thread count of the libraries it uses (called in the child
  /// before the runner is made).
  std::function<void(int)> setThreads;
  /// Touches the libraries once (a tiny GEMM) before the child's memory
  /// baseline, so that one-off library set-up is not counted as workload.
  std::function<void()> prewarm;
};

/// A 64x64 dnnl_sgemm.
void prewarmSgemm();

/// Registered by each implementation's TU.
std::vector<Implementation> &registry();
struct Register {
  Register(Implementation impl) { registry().push_back(std::move(impl)); }
};

/// The runner of any loaded cellrt::Cell (CPU or GPU): the caller's arrays
/// as std::vectors (Memory::Host), or copied once into the cell's device
/// memory (Memory::Device), one Tape reused across iterations.
std::unique_ptr<Runner> makeCellRunner(cellrt::Cell &&cell, const Workload &w,
                                       cellrt::Memory memory);

/// Runs `runner` `warmup` times untimed, then timed until it has `reps`
/// times and `minSeconds` have passed; the times in ms, each divided by
/// `divisor` (steps per run), sorted.
std::vector<double> timeRuns(Runner &runner, int warmup, int reps,
                             double minSeconds, double divisor = 1);
double percentile(const std::vector<double> &sorted, double q);

/// Runs `body` (which must end with _exit) in a forked child and waits;
/// prints "FAILED <label> status=.." and returns false if it failed.
bool runInChild(const std::function<void()> &body, const std::string &label);

/// The machine's peaks (PeakBench.cpp), one forked child per kind and
/// thread count, each printing
///   PEAK kind=K threads=N median_ms=.. rate=.. unit=GFLOP/s|GB/s
/// Kinds: sgemm (dnnl_sgemm, n = 2048), matmul-f32 and matmul-bf16 (oneDNN
/// matmul, n = 2048, weights packed once into its preferred layout; bf16
/// operands, f32 accumulation and output) and copy (memcpy of 256 MiB split
/// over the threads; bytes read + written). Returns the number that failed.
int runPeaks(const std::vector<int> &threads, int reps);

/// Fills `values` with uniform values in [-scale, scale].
void fillRandom(float *values, int64_t count, float scale, uint32_t seed);
std::vector<float> randomVector(int64_t count, float scale, uint32_t seed);

/// omp_set_num_threads of the OpenMP runtime oneDNN and LibTorch load
/// (Debian's are built with libgomp), found with dlsym so that the
/// compiler's own OpenMP runtime is never linked in as a second one.
void setOmpThreads(int threads);
/// The OpenMP part of setOmpThreads alone: the team size of the GEMMs the
/// calling thread starts (an OpenMP ICV is per thread).
void setOmpTeamSize(int threads);

/// Aborts the child with a message.
[[noreturn]] void fail(const std::string &message);

/// The number of input-side and state-side stacked matrices of each cell
/// (docs/gemm-plans.md): ATR 1/1, GRU 3/(2+1), LSTM 4/4, LAU 5/4, SRU 3/0,
/// SR-NMT 3/0.
struct CellShape {
  int inputGates = 0;
  /// Recurrent products per step, in rows of H: GRU {2, 1}.
  std::vector<int> stateGates;
  /// For cells without recurrent products (SRU, SR-NMT), whose time is the
  /// element-wise scan's memory traffic: the floats per row, in units of H,
  /// that a perfectly fused scan must still read and write. Forward: the
  /// projection (3H) and the highway's x (H) in, the output (H) out: 5.
  /// Training adds the state saved for backward (H) and the backward pass:
  /// dout, the projection, the states and x in (6H), dXP (3H) and dx (H)
  /// out: 5 + 1 + 10 = 16.
  int scanFloatsForward = 0;
  int scanFloatsTraining = 0;
};
CellShape cellShape(const std::string &cell);

/// The image of a cell compiled into the benchmarks (bench/CMakeLists.txt);
/// false for another.
bool cellImage(const std::string &cell, cellrt_image &image);

} // namespace cellc_bench

#endif // CELLC_BENCH_BENCH_H
