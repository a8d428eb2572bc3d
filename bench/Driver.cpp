//===- Driver.cpp - Run every workload of every implementation ------------===//
//
//   cellc-bench [--impls cellc,floor,...] [--cells atr,gru,...]
//               [--modes fwd,train,step] [--seq 50x64,100x64]
//               [--step-batches 10,1] [--threads 1,2] [--size 512]
//               [--reps N] [--warmup N] [--min-seconds S] [--list]
//               [--peak]
//
// For every workload (cell x mode x shape x threads) and every implementation
// the driver forks a child: the child sets the thread count, builds the
// runner (params, inputs and gradient arrays the caller owns; primitives and
// loaded cells created once), runs `warmup` untimed iterations and then
// timed ones until it has at least `reps` of them and `min-seconds` have
// passed. It prints one line
//
//   RESULT impl=cellc cell=gru mode=train T=50 B=64 I=512 H=512 threads=1
//          median_ms=.. min_ms=.. max_ms=.. p25_ms=.. p75_ms=.. reps=..
//          work_mb=.. peak_mb=..
//
// (the floor's lines also carry gemm_gflop=.., the GEMM work it did).
// `--peak` instead measures the machine's GEMM and copy rates (PEAK lines,
// PeakBench.cpp), the denominators of the flop and memory floors.
//
// Times are per iteration (per decoding step in step mode). Memory, from
// /proc/self/status of the child:
//   work_mb: peak RSS during the timed iterations above the RSS once the
//            runner exists (the implementation's own workspace: activations,
//            tape, temporaries; cleared with /proc/self/clear_refs = 5);
//   peak_mb: peak RSS of the whole workload above the child's RSS before
//            the runner is made (also the params, inputs and gradient
//            arrays). Before that baseline the implementation's libraries
//            run one tiny operation, so their one-off set-up is not counted.
// The parent runs no computation, so no OpenMP or BLAS thread pool exists
// when it forks.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"
#include "cellrt/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace cellc_bench;

std::vector<Implementation> &cellc_bench::registry() {
  static std::vector<Implementation> impls;
  return impls;
}

const char *cellc_bench::modeName(Mode mode) {
  switch (mode) {
  case Mode::Forward:
    return "fwd";
  case Mode::Training:
    return "train";
  case Mode::Step:
    return "step";
  }
  return "?";
}

void cellc_bench::fillRandom(float *values, int64_t count, float scale,
                             uint32_t seed) {
  // A 64-bit LCG: uniform enough for benchmark operands and ~50x faster
  // than std::uniform_real_distribution (whose generate_canonical calls
  // logl), which dominated the children's set-up.
  uint64_t state = 0x9E3779B97F4A7C15ull * (seed + 1);
  for (int64_t i = 0; i < count; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    float unit = static_cast<float>(state >> 40) * (1.0f / 16777216.0f);
    values[i] = (2.0f * unit - 1.0f) * scale;
  }
}

std::vector<float> cellc_bench::randomVector(int64_t count, float scale,
                                             uint32_t seed) {
  std::vector<float> values(count);
  fillRandom(values.data(), count, scale, seed);
  return values;
}

void cellc_bench::setOmpTeamSize(int threads) {
  using SetThreads = void (*)(int);
  auto set = reinterpret_cast<SetThreads>(
      dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (!set)
    fail("omp_set_num_threads not found (no OpenMP runtime loaded)");
  set(threads);
}

void cellc_bench::setOmpThreads(int threads) {
  setOmpTeamSize(threads);
  // cellc's fused kernels split their rows over the same number of threads.
  cellrt::setNumThreads(threads);
}

void cellc_bench::prewarmSgemm() {
  std::vector<float> a(64 * 64, 0.5f), c(64 * 64);
  dnnl_sgemm('N', 'T', 64, 64, 64, 1.0f, a.data(), 64, a.data(), 64, 0.0f,
             c.data(), 64);
}

void cellc_bench::fail(const std::string &message) {
  std::fprintf(stdout, "ERROR %s\n", message.c_str());
  std::fflush(stdout);
  _exit(3);
}

CellShape cellc_bench::cellShape(const std::string &cell) {
  if (cell == "atr")
    return {1, {1}};
  if (cell == "gru")
    return {3, {2, 1}};
  if (cell == "lstm")
    return {4, {4}};
  if (cell == "lau")
    return {5, {4}};
  if (cell == "sru" || cell == "srnmt")
    return {3, {}, 5, 16};
  if (cell == "ran")
    return {3, {2}};
  if (cell == "rnn")
    return {1, {1}};
  fail("unknown cell " + cell);
}

double cellc_bench::percentile(const std::vector<double> &sorted, double q) {
  double position = q * (sorted.size() - 1);
  size_t low = static_cast<size_t>(position);
  size_t high = std::min(low + 1, sorted.size() - 1);
  double weight = position - low;
  return sorted[low] * (1 - weight) + sorted[high] * weight;
}

std::vector<double> cellc_bench::timeRuns(Runner &runner, int warmup,
                                          int reps, double minSeconds,
                                          double divisor) {
  for (int i = 0; i < warmup; ++i)
    runner.run();
  std::vector<double> times;
  auto begin = std::chrono::steady_clock::now();
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    runner.run();
    auto t1 = std::chrono::steady_clock::now();
    times.push_back(
        std::chrono::duration<double, std::milli>(t1 - t0).count() / divisor);
    double elapsed = std::chrono::duration<double>(t1 - begin).count();
    if (static_cast<int>(times.size()) >= reps && elapsed >= minSeconds)
      break;
  }
  std::sort(times.begin(), times.end());
  return times;
}

bool cellc_bench::runInChild(const std::function<void()> &body,
                             const std::string &label) {
  std::fflush(stdout);
  pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return false;
  }
  if (child == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok)
    std::printf("FAILED %s status=%d\n", label.c_str(), status);
  std::fflush(stdout);
  return ok;
}

namespace {

std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator))
    if (!part.empty())
      parts.push_back(part);
  return parts;
}

/// A field of /proc/self/status in kB.
long statusKb(const char *field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  size_t length = std::strlen(field);
  while (std::getline(status, line))
    if (line.compare(0, length, field) == 0 && line[length] == ':')
      return std::atol(line.c_str() + length + 1);
  return -1;
}

bool resetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return bool(clear);
}

struct Options {
  std::vector<std::string> impls, cells = {"atr", "gru",  "lstm",
                                           "lau", "sru", "srnmt"};
  std::vector<Mode> modes = {Mode::Forward, Mode::Training, Mode::Step};
  std::vector<std::pair<int64_t, int64_t>> sequences = {{50, 64}, {100, 64}};
  std::vector<int64_t> stepBatches = {10, 1};
  std::vector<int> threads = {1, 2};
  int64_t size = 512;
  int reps = 5, warmup = 1;
  double minSeconds = 0.0;
  int64_t stepsPerRun = 100;
};

std::string describe(const std::string &impl, const Workload &w) {
  char text[256];
  std::snprintf(text, sizeof text,
                "impl=%s cell=%s mode=%s T=%lld B=%lld I=%lld H=%lld "
                "threads=%d",
                impl.c_str(), w.cell.c_str(), modeName(w.mode),
                static_cast<long long>(w.mode == Mode::Step ? 1 : w.T),
                static_cast<long long>(w.B), static_cast<long long>(w.I),
                static_cast<long long>(w.H), w.threads);
  return text;
}

/// The child: builds the runner, times it, prints one line, exits.
[[noreturn]] void runChild(const Implementation &impl, const Workload &w,
                           const Options &options) {
  for (const Implementation &any : registry())
    if (any.setThreads)
      any.setThreads(w.threads);
  if (impl.prewarm)
    impl.prewarm();
  long startKb = statusKb("VmRSS");
  std::string why;
  std::unique_ptr<Runner> runner = impl.make(w, why);
  if (!runner) {
    std::printf("SKIP %s reason=%s\n", describe(impl.name, w).c_str(),
                why.c_str());
    std::fflush(stdout);
    _exit(0);
  }
  long setupPeakKb = statusKb("VmHWM");
  bool cleared = resetPeakRss();
  long baseKb = statusKb("VmRSS");
  double perRun = w.mode == Mode::Step ? double(w.stepsPerRun) : 1.0;
  std::vector<double> times = timeRuns(*runner, options.warmup, options.reps,
                                       options.minSeconds, perRun);
  long runPeakKb = statusKb("VmHWM");
  // The floor's GEMM flops per iteration (per step): the flop floor of
  // every implementation of the workload (bench/report.py).
  // The scan's bytes likewise give the memory floor of SRU and SR-NMT.
  char flops[96] = "";
  if (runner->gemmFlops() >= 0)
    std::snprintf(flops, sizeof flops, " gemm_gflop=%.6g",
                  runner->gemmFlops() / perRun * 1e-9);
  if (runner->scanBytes() > 0)
    std::snprintf(flops + std::strlen(flops), sizeof flops - std::strlen(flops),
                  " scan_mb=%.6g", runner->scanBytes() / perRun * 1e-6);
  std::printf("RESULT %s median_ms=%.4f min_ms=%.4f max_ms=%.4f p25_ms=%.4f "
              "p75_ms=%.4f reps=%zu work_mb=%.1f peak_mb=%.1f%s%s\n",
              describe(impl.name, w).c_str(), percentile(times, 0.5),
              times.front(), times.back(), percentile(times, 0.25),
              percentile(times, 0.75), times.size(),
              cleared ? (runPeakKb - baseKb) / 1024.0 : -1.0,
              (std::max(setupPeakKb, runPeakKb) - startKb) / 1024.0, flops,
              cleared ? "" : " (clear_refs unavailable)");
  std::fflush(stdout);
  _exit(0);
}

void usage() {
  std::fprintf(stderr,
               "usage: cellc-bench [--impls A,B] [--cells C,D] "
               "[--modes fwd,train,step] [--seq 50x64,100x64] "
               "[--step-batches 10,1] [--threads 1,2] [--size 512] "
               "[--reps N] [--warmup N] [--min-seconds S] "
               "[--steps-per-run N] [--list] [--peak]\n"
               "  --peak: only the machine's GEMM and copy peaks, at each "
               "--threads count\n");
  std::exit(2);
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  bool peak = false;
  for (const Implementation &impl : registry())
    options.impls.push_back(impl.name);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        usage();
      return argv[++i];
    };
    if (arg == "--list") {
      for (const Implementation &impl : registry())
        std::printf("%s\n", impl.name.c_str());
      return 0;
    } else if (arg == "--impls") {
      options.impls = split(value(), ',');
    } else if (arg == "--cells") {
      options.cells = split(value(), ',');
    } else if (arg == "--modes") {
      options.modes.clear();
      for (const std::string &mode : split(value(), ','))
        options.modes.push_back(mode == "fwd"     ? Mode::Forward
                                : mode == "train" ? Mode::Training
                                : mode == "step"  ? Mode::Step
                                                  : (usage(), Mode::Step));
    } else if (arg == "--seq") {
      options.sequences.clear();
      for (const std::string &shape : split(value(), ',')) {
        auto parts = split(shape, 'x');
        if (parts.size() != 2)
          usage();
        options.sequences.push_back(
            {std::atoll(parts[0].c_str()), std::atoll(parts[1].c_str())});
      }
    } else if (arg == "--step-batches") {
      options.stepBatches.clear();
      for (const std::string &b : split(value(), ','))
        options.stepBatches.push_back(std::atoll(b.c_str()));
    } else if (arg == "--threads") {
      options.threads.clear();
      for (const std::string &t : split(value(), ','))
        options.threads.push_back(std::atoi(t.c_str()));
    } else if (arg == "--size") {
      options.size = std::atoll(value().c_str());
    } else if (arg == "--reps") {
      options.reps = std::atoi(value().c_str());
    } else if (arg == "--warmup") {
      options.warmup = std::atoi(value().c_str());
    } else if (arg == "--min-seconds") {
      options.minSeconds = std::atof(value().c_str());
    } else if (arg == "--steps-per-run") {
      options.stepsPerRun = std::atoll(value().c_str());
    } else if (arg == "--peak") {
      peak = true;
    } else {
      usage();
    }
  }

  if (peak)
    return runPeaks(options.threads, options.reps) ? 1 : 0;

  std::vector<const Implementation *> impls;
  for (const std::string &name : options.impls) {
    auto it = std::find_if(registry().begin(), registry().end(),
                           [&](const Implementation &impl) {
                             return impl.name == name;
                           });
    if (it == registry().end()) {
      std::printf("SKIP impl=%s reason=not-built\n", name.c_str());
      continue;
    }
    impls.push_back(&*it);
  }

  std::vector<Workload> workloads;
  for (int threads : options.threads)
    for (Mode mode : options.modes)
      for (const std::string &cell : options.cells) {
        Workload w;
        w.cell = cell;
        w.mode = mode;
        w.I = w.H = options.size;
        w.threads = threads;
        w.stepsPerRun = options.stepsPerRun;
        if (mode == Mode::Step) {
          for (int64_t batch : options.stepBatches) {
            w.T = 1;
            w.B = batch;
            workloads.push_back(w);
          }
        } else {
          for (auto [steps, batch] : options.sequences) {
            w.T = steps;
            w.B = batch;
            workloads.push_back(w);
          }
        }
      }

  int failures = 0;
  // Implementations interleave per workload, so that a change of machine
  // load hits every implementation of a comparison alike.
  for (const Workload &w : workloads)
    for (const Implementation *impl : impls)
      if (!runInChild([&] { runChild(*impl, w, options); },
                      describe(impl->name, w)))
        ++failures;
  return failures ? 1 : 0;
}
