//===- ThisThreadTest.cpp - cellrt::KernelsOnThisThread ------------------===//

#include "cellrt/ThisThread.h"
#include "cellrt/Runtime.h"
#include "runtime/Parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <dlfcn.h>
#include <thread>
#include <vector>

using namespace cellrt;

namespace {

constexpr int64_t kRows = 1 << 12, kWork = int64_t(1) << 30;

/// How many chunks parallelFor cut kRows rows of kWork into, every row
/// visited once.
int chunksOfABigCall() {
  std::atomic<int> chunks{0};
  std::vector<std::atomic<int>> visits(kRows);
  parallelFor(kRows, kWork, [&](int64_t begin, int64_t end) {
    chunks.fetch_add(1);
    for (int64_t row = begin; row < end; ++row)
      visits[row].fetch_add(1);
  });
  for (const std::atomic<int> &count : visits)
    EXPECT_EQ(count.load(), 1);
  return chunks.load();
}

/// The pool's size for the test, as it was after.
struct PoolOf {
  int before = getNumThreads();
  explicit PoolOf(int threads) { setNumThreads(threads); }
  ~PoolOf() { setNumThreads(before); }
};

/// This thread's OpenMP team size (oneDNN's), or 0 with no OpenMP.
int openMpThreads() {
  auto get =
      reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  return get ? get() : 0;
}

void setOpenMpThreads(int n) {
  auto set = reinterpret_cast<void (*)(int)>(
      dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set)
    set(n);
}

/// The size of the team cellrt's tiled steps would get.
int64_t teamSize() {
  int64_t size = 0;
  detail::runTeam(
      4, [&](int64_t team) { size = team; }, [](int64_t) {});
  return size;
}

} // namespace

// While a KernelsOnThisThread lives, its thread's calls run as in a
// one-thread process (one chunk, a team of one, getNumThreads() 1); the
// pool keeps its size for other threads, and scopes nest.
TEST(KernelsOnThisThread, ItsThreadRunsAloneAndOthersDoNot) {
  PoolOf pool(2);
  ASSERT_EQ(chunksOfABigCall(), 2);
  ASSERT_EQ(teamSize(), 2);
  {
    KernelsOnThisThread alone;
    EXPECT_EQ(getNumThreads(), 1);
    EXPECT_EQ(chunksOfABigCall(), 1);
    EXPECT_EQ(teamSize(), 1);
    {
      KernelsOnThisThread again;
      EXPECT_EQ(chunksOfABigCall(), 1);
    }
    EXPECT_EQ(getNumThreads(), 1);
    int otherChunks = 0, otherThreads = 0;
    std::thread other([&] {
      otherThreads = getNumThreads();
      otherChunks = chunksOfABigCall();
    });
    other.join();
    EXPECT_EQ(otherThreads, 2);
    EXPECT_EQ(otherChunks, 2);
  }
  EXPECT_EQ(getNumThreads(), 2);
  EXPECT_EQ(chunksOfABigCall(), 2);
}

// Two threads, each alone, call the kernels' parallelFor at once: both
// run every row of their own calls on themselves, and nothing waits on
// the pool.
TEST(KernelsOnThisThread, TwoThreadsAloneRunSideBySide) {
  PoolOf pool(2);
  std::atomic<int> chunks{0};
  auto job = [&] {
    KernelsOnThisThread alone;
    std::thread::id self = std::this_thread::get_id();
    for (int call = 0; call < 50; ++call)
      parallelFor(kRows, kWork, [&](int64_t begin, int64_t end) {
        EXPECT_EQ(std::this_thread::get_id(), self);
        EXPECT_EQ(end - begin, kRows);
        chunks.fetch_add(1);
      });
  };
  std::thread first(job), second(job);
  first.join();
  second.join();
  EXPECT_EQ(chunks.load(), 100);
}

// The products follow: the thread's OpenMP team (oneDNN's) is 1 inside,
// what it was after, and another thread's is its own.
TEST(KernelsOnThisThread, ItsThreadsProductsRunAloneToo) {
  if (openMpThreads() == 0)
    GTEST_SKIP() << "no OpenMP runtime loaded";
  const int before = openMpThreads();
  setOpenMpThreads(3);
  {
    KernelsOnThisThread alone;
    EXPECT_EQ(openMpThreads(), 1);
    int other = 0;
    std::thread([&] {
      setOpenMpThreads(2);
      other = openMpThreads();
    }).join();
    EXPECT_EQ(other, 2);
    EXPECT_EQ(openMpThreads(), 1);
  }
  EXPECT_EQ(openMpThreads(), 3);
  setOpenMpThreads(before);
}
