//===- ThisThreadTest.cpp - cellrt::KernelsOnThisThread ------------------===//

#include "cellrt/ThisThread.h"
#include "cellrt/Runtime.h"
#include "runtime/Parallel.h"

#include <gtest/gtest.h>

#include <atomic>
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
  int threadsBefore = getNumThreads();
  setNumThreads(2);
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
  setNumThreads(threadsBefore);
}

// Two threads, each alone, call the kernels' parallelFor at once: both
// run every row of their own calls on themselves, and nothing waits on
// the pool.
TEST(KernelsOnThisThread, TwoThreadsAloneRunSideBySide) {
  int threadsBefore = getNumThreads();
  setNumThreads(2);
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
  setNumThreads(threadsBefore);
  EXPECT_EQ(chunks.load(), 100);
}
