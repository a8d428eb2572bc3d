//===- Parallel.cpp - Rows of a kernel call split across threads ----------===//

#include "Parallel.h"
#include "OneDnn.h"
#include "OpenMpTeam.h"
#include "cellrt/Runtime.h"
#include "cellrt/ThisThread.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <sched.h>

using namespace cellrt;
using namespace cellrt::detail;

namespace {

/// Below this much work (row elements) a wake-up costs more than it saves:
/// a 64 x 512 step kernel is split, a B = 10 decoding step is not.
constexpr int64_t kMinParallelWork = 16 * 1024;

/// Whether this thread is running a chunk or member of a pool job: a call
/// of the pool from inside one (a parallelFor body that multiplies in bf16,
/// whose rounding is split across the pool) runs inline, since the pool's
/// lock is held and its threads are busy.
thread_local bool insideJob = false;

/// Whether this thread runs its calls alone (cellrt::KernelsOnThisThread).
thread_local bool kernelsOnThisThread = false;

/// Tests: how long a woken worker waits before taking its chunk (a
/// virtual machine's slow wake-up, made certain), and how many chunks
/// the workers took while spinning between back-to-back jobs.
std::atomic<int64_t> wakeDelayMicroseconds{0};
std::atomic<bool> pileUpForTesting{false};
std::atomic<int64_t> chunksAfterQuickJobs{0};

int64_t nowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct InsideJob {
  bool previous = insideJob;
  InsideJob() { insideJob = true; }
  ~InsideJob() { insideJob = previous; }
};

int defaultThreads() {
  for (const char *name : {"CELLRT_NUM_THREADS", "OMP_NUM_THREADS"})
    if (const char *value = std::getenv(name))
      if (int n = std::atoi(value); n > 0)
        return n;
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware ? static_cast<int>(hardware) : 1;
}

class Pool {
public:
  static Pool &get() {
    static Pool pool;
    return pool;
  }

  int threads() const { return wanted.load(); }
  void setThreads(int n) { wanted.store(n < 1 ? 1 : n); }

  void run(int64_t rows, const std::function<void(int64_t, int64_t)> &body) {
    int chunks = static_cast<int>(std::min<int64_t>(threads(), rows));
    if (const OpenMpTeam *team = OpenMpTeam::get()) {
      // The chunks are the same as the pool's, whatever the team's size:
      // the results' bits do not depend on who runs which chunk.
      team->run(chunks, [&](int member, int members) {
        InsideJob inside;
        for (int chunk = member; chunk < chunks; chunk += members)
          body(rows * chunk / chunks, rows * (chunk + 1) / chunks);
      });
      return;
    }
    std::lock_guard<std::mutex> callLock(callMutex);
    runChunks(chunks, rows, body);
  }

  /// One member per chunk: the count is read once, under the call lock.
  void runTeam(int64_t maxMembers, const std::function<void(int64_t)> &prepare,
               const std::function<void(int64_t)> &body) {
    if (const OpenMpTeam *team = OpenMpTeam::get()) {
      // The team's size is known only inside: its first member prepares.
      team->run(static_cast<int>(std::max<int64_t>(
                    1, std::min<int64_t>(threads(), maxMembers))),
                [&](int member, int members) {
                  if (member == 0)
                    prepare(members);
                  team->barrier();
                  InsideJob inside;
                  body(member);
                });
      return;
    }
    std::lock_guard<std::mutex> callLock(callMutex);
    int64_t team =
        std::max<int64_t>(1, std::min<int64_t>(threads(), maxMembers));
    prepare(team);
    if (team == 1) {
      InsideJob inside;
      body(0);
      return;
    }
    runChunks(static_cast<int>(team), team,
              [&](int64_t begin, int64_t) { body(begin); });
  }

  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      ++generation;
    }
    wake.notify_all();
    for (std::thread &worker : workers)
      worker.join();
  }

private:
  /// Runs `chunks` chunks of [0, rows), the first on the calling thread.
  /// The caller holds callMutex.
  void runChunks(int chunks, int64_t rows,
                 const std::function<void(int64_t, int64_t)> &body) {
    startWorkers(chunks - 1);
    {
      std::lock_guard<std::mutex> lock(mutex);
      job = &body;
      jobRows = rows;
      jobChunks = chunks;
      pending.store(chunks - 1);
      // Back to back: this call began within the spin budget of the last
      // one's return (the caller's own work between them, no thread's
      // wake-up in it). The workers spin for the next call after it.
      backToBack = nowNanoseconds() - lastReturned < spinBudget() * 1000;
      callerCpu = sched_getcpu();
      ++generation;
    }
    wake.notify_all();
    {
      InsideJob inside;
      body(0, rows / chunks);
    }
    // Back to back, the workers were spinning: their chunks end about
    // when the caller's does.
    if (backToBack)
      spinUntil([&] { return pending.load() == 0; });
    std::unique_lock<std::mutex> lock(mutex);
    finished.wait(lock, [&] { return pending.load() == 0; });
    job = nullptr;
    lastReturned = nowNanoseconds();
  }

  static int64_t spinBudget() {
    static const int64_t budget = spinMicroseconds();
    return budget;
  }

  /// Spins up to spinMicroseconds() for `ready` before the caller sleeps.
  template <typename Ready> static void spinUntil(Ready ready) {
    int64_t budget = spinBudget();
    if (budget <= 0 || ready())
      return;
    auto until =
        std::chrono::steady_clock::now() + std::chrono::microseconds(budget);
    for (int i = 0;; ++i) {
      if (ready())
        return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (i % 64 == 63 && std::chrono::steady_clock::now() > until)
        return;
    }
  }

  /// CELLRT_SPIN_US, else 50, the budget measured in bench/README.md ("The
  /// pool now spins briefly"); 0 always sleeps at once.
  static int64_t spinMicroseconds() {
    const char *value = std::getenv("CELLRT_SPIN_US");
    return value ? std::atoll(value) : 50;
  }

  Pool() : wanted(defaultThreads()) {}

  void startWorkers(int count) {
    while (static_cast<int>(workers.size()) < count) {
      int index = static_cast<int>(workers.size()) + 1;
      workers.emplace_back([this, index] { work(index); });
    }
  }

  void work(int index) {
    uint64_t seen = 0;
    // Whether the last job came back to back with the one before (see
    // runChunks): kernels back to back (a scan-free cell's training steps,
    // decoding steps) come microseconds apart, kernels between GEMMs come
    // after the GEMM, and spinning through a GEMM would take a core from
    // oneDNN's threads. The caller decides, by its own time between the
    // calls: measured by a worker from its last chunk to its wake-up, the
    // gap held the wake-up itself (~100 µs on some VMs), so a worker that
    // once fell asleep slept between back-to-back jobs for good (decoding
    // steps at 2 threads ran 10x slower in half of the processes).
    bool quick = false;
    for (;;) {
      if (quick)
        spinUntil([&] { return generation.load() != seen; });
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return generation.load() != seen; });
      seen = generation.load();
      if (stopping)
        return;
      if (!job || index >= jobChunks)
        continue;
      const auto *body = job;
      const bool jobBackToBack = backToBack;
      const int jobCallerCpu = callerCpu;
      int64_t begin = jobRows * index / jobChunks,
              end = jobRows * (index + 1) / jobChunks;
      lock.unlock();
      // Tests: where the scheduler may put a woken worker, made certain.
      if (pileUpForTesting.load())
        move(jobCallerCpu, /*onto=*/true);
      // Woken on the caller's core (the scheduler puts a woken thread
      // beside its waker), the two would take turns on it for good while
      // the other core idles: with one of them runnable at a time, nothing
      // balances them apart (2-thread decoding steps ran 10x slower in
      // half of the processes, bench/README.md). Move off it.
      if (sched_getcpu() == jobCallerCpu)
        move(jobCallerCpu, /*onto=*/false);
      if (int64_t delay = wakeDelayMicroseconds.load())
        std::this_thread::sleep_for(std::chrono::microseconds(delay));
      quick = jobBackToBack;
      if (quick)
        chunksAfterQuickJobs.fetch_add(1);
      {
        InsideJob inside;
        (*body)(begin, end);
      }
      if (pending.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> done(mutex);
        finished.notify_one();
      }
    }
  }

  /// Moves this thread onto `cpu` (onto: true) or off it, to a core it
  /// may run on, and leaves its affinity as it was: the kernel moves a
  /// thread at once when its affinity excludes its core. Nothing where
  /// that leaves no core.
  static void move(int cpu, bool onto) {
    cpu_set_t all, via;
    if (cpu < 0 || sched_getaffinity(0, sizeof(all), &all) != 0)
      return;
    if (onto) {
      CPU_ZERO(&via);
      CPU_SET(cpu, &via);
    } else {
      via = all;
      CPU_CLR(cpu, &via);
    }
    if (CPU_COUNT(&via) == 0)
      return;
    sched_setaffinity(0, sizeof(via), &via);
    sched_setaffinity(0, sizeof(all), &all);
  }

  /// The core the caller posted the current job from (under `mutex`).
  int callerCpu = -1;
  std::atomic<int> wanted;
  std::mutex callMutex, mutex;
  std::condition_variable wake, finished;
  std::vector<std::thread> workers;
  const std::function<void(int64_t, int64_t)> *job = nullptr;
  int64_t jobRows = 0;
  int jobChunks = 0;
  std::atomic<int> pending{0};
  /// When the last call returned (steady clock, ns), and whether the
  /// current job began within the spin budget of that: written under
  /// `mutex` by the caller (which holds callMutex).
  int64_t lastReturned = 0;
  bool backToBack = false;
  /// Written under `mutex`; read without it while spinning.
  std::atomic<uint64_t> generation{0};
  bool stopping = false;
};

} // namespace

void cellrt::detail::parallelRows(
    int64_t rows, int64_t work,
    const std::function<void(int64_t, int64_t)> &body) {
  Pool &pool = Pool::get();
  if (threads() < 2 || rows < 2 || work < kMinParallelWork || insideJob) {
    body(0, rows);
    return;
  }
  pool.run(rows, body);
}

int cellrt::detail::threads() {
  return kernelsOnThisThread ? 1 : Pool::get().threads();
}

void cellrt::detail::runTeam(int64_t maxMembers,
                             const std::function<void(int64_t)> &prepare,
                             const std::function<void(int64_t)> &body) {
  if (insideJob || kernelsOnThisThread) {
    prepare(1);
    body(0);
    return;
  }
  Pool::get().runTeam(maxMembers, prepare, body);
}

void cellrt::setNumThreads(int threads) { Pool::get().setThreads(threads); }
int cellrt::getNumThreads() { return threads(); }

cellrt::KernelsOnThisThread::KernelsOnThisThread()
    : previous(kernelsOnThisThread) {
  kernelsOnThisThread = true;
  // OpenMP's team size is the calling thread's own setting (libgomp keeps
  // one per thread, and a thread that was never in a team starts from the
  // process's default, not from what another thread set).
  const OpenMPApi &api = openMP();
  if (api.set && api.get) {
    openMpBefore = api.get();
    api.set(1);
  }
}

cellrt::KernelsOnThisThread::~KernelsOnThisThread() {
  kernelsOnThisThread = previous;
  if (openMpBefore > 0)
    openMP().set(openMpBefore);
}

void cellrt::parallelFor(int64_t rows, int64_t work,
                         const std::function<void(int64_t, int64_t)> &body) {
  parallelRows(rows, work, body);
}

void cellrt::detail::setPoolWakeDelayForTesting(int64_t microseconds) {
  wakeDelayMicroseconds.store(microseconds);
}

int64_t cellrt::detail::poolChunksAfterQuickJobs() {
  return chunksAfterQuickJobs.load();
}

void cellrt::detail::setPoolPileUpForTesting(bool pileUp) {
  pileUpForTesting.store(pileUp);
}
