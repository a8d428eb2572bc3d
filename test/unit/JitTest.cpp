//===- JitTest.cpp - The JIT: compile, cache, errors, AOT equivalence -----===//

#include "jit/Jit.h"

#include "atr.h" // cellc cells/atr.cell -emit=header (the AOT object)
#include "cellrt/PlanTables.h"
#include "cellrt/Runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cstring>
#include <random>
#include <sys/wait.h>
#include <unistd.h>

using namespace cellc;

namespace {

/// The bytes of an image's plan tables.
std::string tablesOf(const cellrt_image &image) {
  return std::string(image.plan, cellrt::planTablesSize(image.plan));
}

const char *const kAtrPath = CELLC_SOURCE_DIR "/cells/atr.cell";

/// A fresh cache folder, removed at the end of the test.
struct TemporaryDir {
  llvm::SmallString<128> path;
  TemporaryDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("cellc-jit-test", path));
  }
  ~TemporaryDir() { llvm::sys::fs::remove_directories(path); }
  std::string str() const { return std::string(path); }
};

jit::CompileOptions withCache(const std::string &dir) {
  jit::CompileOptions options;
  options.cacheDir = dir;
  return options;
}

TEST(Jit, CompilesAtrAndHitsTheCacheTheSecondTime) {
  TemporaryDir cache;
  auto cold = jit::compileFile(kAtrPath, withCache(cache.str()));
  ASSERT_TRUE(cold.ok()) << cold.error();
  EXPECT_FALSE(cold->fromCache());
  EXPECT_EQ(cold->cellName(), "atr");
  EXPECT_TRUE(llvm::sys::fs::exists(cold->objectPath()));
  EXPECT_TRUE(llvm::StringRef(cold->objectPath()).endswith(".o"));

  auto warm = jit::compileFile(kAtrPath, withCache(cache.str()));
  ASSERT_TRUE(warm.ok()) << warm.error();
  EXPECT_TRUE(warm->fromCache());
  EXPECT_EQ(warm->cellName(), "atr");
  EXPECT_EQ(warm->objectPath(), cold->objectPath());
  EXPECT_EQ(tablesOf(warm->image()), tablesOf(cold->image()));
  EXPECT_EQ(warm->image().num_kernels, cold->image().num_kernels);
  std::printf("[ jit      ] atr: cold compile %.1f ms, cache hit %.1f ms\n",
              cold->compileSeconds() * 1e3, warm->compileSeconds() * 1e3);
  EXPECT_LT(warm->compileSeconds(), cold->compileSeconds());

  // Only the temporary and renamed object are ever written: no leftovers.
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(cache.str(), ec), end;
       it != end && !ec; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1);
}

// A cache hit used to drop the warnings: a cell warned only the first time
// it was compiled on a machine.
TEST(Jit, CacheHitsReplayTheWarnings) {
  const char *source = "cell unused(x: [I]) {\n"
                       "  state h: [H]\n"
                       "  param W: [H, I], U: [H, H], b: [H]\n"
                       "  h' = tanh(W @ x + U @ h)\n"
                       "}\n";
  TemporaryDir cache;
  auto cold = jit::compileSource(source, "unused.cell", withCache(cache.str()));
  ASSERT_TRUE(cold.ok()) << cold.error();
  EXPECT_NE(cold->warnings().find("unused.cell:3:31: warning: param 'b' is "
                                  "never used"),
            std::string::npos)
      << cold->warnings();
  auto warm = jit::compileSource(source, "unused.cell", withCache(cache.str()));
  ASSERT_TRUE(warm.ok()) << warm.error();
  EXPECT_TRUE(warm->fromCache());
  EXPECT_EQ(warm->warnings(), cold->warnings());
  // The warnings name the file: another name is another entry.
  auto renamed =
      jit::compileSource(source, "other.cell", withCache(cache.str()));
  ASSERT_TRUE(renamed.ok()) << renamed.error();
  EXPECT_FALSE(renamed->fromCache());
  EXPECT_NE(renamed->warnings().find("other.cell:3:31: warning"),
            std::string::npos)
      << renamed->warnings();
  auto atr = jit::compileFile(kAtrPath, withCache(cache.str()));
  auto atrWarm = jit::compileFile(kAtrPath, withCache(cache.str()));
  ASSERT_TRUE(atr.ok() && atrWarm.ok());
  EXPECT_TRUE(atrWarm->fromCache());
  EXPECT_EQ(atrWarm->warnings(), "");
}

TEST(Jit, OptionsArePartOfTheCacheKey) {
  TemporaryDir cache;
  auto training = jit::compileFile(kAtrPath, withCache(cache.str()));
  jit::CompileOptions inference = withCache(cache.str());
  inference.withBackward = false;
  auto forwardOnly = jit::compileFile(kAtrPath, inference);
  ASSERT_TRUE(training.ok() && forwardOnly.ok());
  EXPECT_FALSE(forwardOnly->fromCache());
  EXPECT_NE(training->objectPath(), forwardOnly->objectPath());
  auto trainingCell = cellrt::Cell::load(training->image());
  auto inferenceCell = cellrt::Cell::load(forwardOnly->image());
  ASSERT_TRUE(trainingCell.ok() && inferenceCell.ok());
  EXPECT_TRUE(trainingCell->hasBackward());
  EXPECT_FALSE(inferenceCell->hasBackward());
}

TEST(Jit, EmptyCacheDirDisablesTheCache) {
  auto first = jit::compileFile(kAtrPath, withCache(""));
  auto second = jit::compileFile(kAtrPath, withCache(""));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_FALSE(second->fromCache());
  EXPECT_EQ(second->objectPath(), "");
}

TEST(Jit, ReturnsLocatedDiagnostics) {
  const char *source = "cell bad(x: [I]) {\n"
                       "  state h: [H]\n"
                       "  param W: [H, I]\n"
                       "  h' = tanh(W @ x + q)\n"
                       "}\n";
  auto compiled = jit::compileSource(source, "bad.cell", withCache(""));
  ASSERT_FALSE(compiled.ok());
  const std::string &text = compiled.error();
  EXPECT_NE(text.find("bad.cell:4:"), std::string::npos) << text;
  EXPECT_NE(text.find(": error: "), std::string::npos) << text;
  EXPECT_NE(text.find("h' = tanh(W @ x + q)"), std::string::npos) << text;
  EXPECT_NE(text.find('^'), std::string::npos) << text;
}

TEST(Jit, MissingFileIsAnError) {
  auto compiled = jit::compileFile("/nonexistent/x.cell", withCache(""));
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(compiled.error().find("/nonexistent/x.cell"), std::string::npos);
}

const char *const kTwoCells = "cell first(x: [I]) {\n"
                              "  state h: [H]\n"
                              "  param W: [H, I], U: [H, H]\n"
                              "  h' = tanh(W @ x + U @ h)\n"
                              "}\n"
                              "cell second(x: [I]) {\n"
                              "  state h: [H]\n"
                              "  param W: [H, I]\n"
                              "  h' = sigmoid(W @ x) * h\n"
                              "}\n";

TEST(Jit, SeveralCellsNeedAName) {
  auto ambiguous = jit::compileSource(kTwoCells, "two.cell", withCache(""));
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_NE(ambiguous.error().find("first, second"), std::string::npos)
      << ambiguous.error();

  jit::CompileOptions options = withCache("");
  options.cellName = "second";
  auto second = jit::compileSource(kTwoCells, "two.cell", options);
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_EQ(second->cellName(), "second");
  cellrt::Expected<cellrt::Plan> plan =
      cellrt::decodePlanImage(second->image().plan);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->cellName, "second");

  options.cellName = "third";
  auto missing = jit::compileSource(kTwoCells, "two.cell", options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("'third'"), std::string::npos);
}

TEST(Jit, CacheHitFindsTheCellOfAMultiCellFile) {
  TemporaryDir cache;
  jit::CompileOptions options = withCache(cache.str());
  options.cellName = "second";
  ASSERT_TRUE(jit::compileSource(kTwoCells, "two.cell", options).ok());
  auto warm = jit::compileSource(kTwoCells, "two.cell", options);
  ASSERT_TRUE(warm.ok()) << warm.error();
  EXPECT_TRUE(warm->fromCache());
  EXPECT_EQ(warm->cellName(), "second");
}

TEST(Jit, FixedDimsReachThePlan) {
  jit::CompileOptions options = withCache("");
  options.fixedDims["H"] = 8;
  auto compiled = jit::compileFile(kAtrPath, options);
  ASSERT_TRUE(compiled.ok()) << compiled.error();
  auto cell = cellrt::Cell::load(compiled->image());
  ASSERT_TRUE(cell.ok()) << cell.error();
  const auto &dims = cell->getPlan().dims;
  EXPECT_EQ(std::find(dims.begin(), dims.end(), "H"), dims.end());
}

/// Forward and backward through one image; every result array concatenated.
std::vector<float> runTraining(const cellrt_image &image) {
  const int64_t T = 6, B = 3, I = 5, H = 7;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  auto random = [&](int64_t n) {
    std::vector<float> v(n);
    for (float &x : v)
      x = uniform(rng);
    return v;
  };
  std::vector<float> x = random(T * B * I), wx = random(H * I),
                     wh = random(H * H), h0 = random(B * H),
                     dout = random(T * B * H), dfinal = random(B * H);
  std::vector<int32_t> lengths = {6, 1, 4};
  std::vector<float> out(T * B * H), final(B * H), dx(T * B * I), dwx(H * I),
      dwh(H * H), dh0(B * H);

  auto cell = cellrt::Cell::load(image);
  EXPECT_TRUE(cell.ok()) << cell.error();
  if (!cell.ok())
    return {};
  cellrt::ForwardArgs args;
  args.inputs = {{x.data(), {T, B, I}}};
  args.lengths = lengths.data();
  args.initialStates = {{h0.data(), {B, H}}};
  args.params = {{"Wx", {wx.data(), {H, I}}}, {"Wh", {wh.data(), {H, H}}}};
  args.output = {out.data(), {T, B, H}};
  args.finalStates = {{final.data(), {B, H}}};
  cellrt::Tape tape;
  cellrt::Status status = cell->forward(args, tape);
  EXPECT_TRUE(status.ok()) << status.message();
  cellrt::BackwardArgs grads;
  grads.outputGradient = {dout.data(), {T, B, H}};
  grads.finalStateGradients = {{dfinal.data(), {B, H}}};
  grads.inputGradients = {{dx.data(), {T, B, I}}};
  grads.initialStateGradients = {{dh0.data(), {B, H}}};
  grads.paramGradients = {{"Wx", {dwx.data(), {H, I}}},
                          {"Wh", {dwh.data(), {H, H}}}};
  status = cell->backward(args, grads, tape);
  EXPECT_TRUE(status.ok()) << status.message();
  std::vector<float> all;
  for (const auto *v : {&out, &final, &dx, &dwx, &dwh, &dh0})
    all.insert(all.end(), v->begin(), v->end());
  return all;
}

TEST(Jit, BitIdenticalToTheAheadOfTimeObject) {
  auto compiled = jit::compileFile(kAtrPath, withCache(""));
  ASSERT_TRUE(compiled.ok()) << compiled.error();
  EXPECT_EQ(tablesOf(compiled->image()), tablesOf(cellc_atr_image()));
  std::vector<float> jitResults = runTraining(compiled->image());
  std::vector<float> aotResults = runTraining(cellc_atr_image());
  ASSERT_EQ(jitResults.size(), aotResults.size());
  ASSERT_FALSE(jitResults.empty());
  EXPECT_EQ(std::memcmp(jitResults.data(), aotResults.data(),
                        jitResults.size() * sizeof(float)),
            0);
}

/// The bytes of `path`.
std::string bytesOf(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : "";
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  out << bytes;
}

// Flipped bytes in a cached object used to be run: SIGSEGV or SIGILL on
// every later run, and the entry was never repaired.
TEST(Jit, DamagedCacheEntriesAreRecompiledAndRepaired) {
  TemporaryDir cache;
  auto cold = jit::compileFile(kAtrPath, withCache(cache.str()));
  ASSERT_TRUE(cold.ok()) << cold.error();
  std::string entry = bytesOf(cold->objectPath());
  std::string flipped = entry;
  for (size_t i = 0; i < 64; ++i)
    flipped[flipped.size() / 3 + i] ^= 0x5a;
  std::string truncated = entry.substr(0, entry.size() / 2);
  for (const std::string *damage : {&flipped, &truncated}) {
    writeBytes(cold->objectPath(), *damage);
    auto again = jit::compileFile(kAtrPath, withCache(cache.str()));
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_FALSE(again->fromCache()) << "a damaged entry was loaded";
    EXPECT_EQ(runTraining(again->image()), runTraining(cellc_atr_image()));
    EXPECT_EQ(bytesOf(cold->objectPath()), entry) << "entry not repaired";
  }
  auto warm = jit::compileFile(kAtrPath, withCache(cache.str()));
  ASSERT_TRUE(warm.ok()) << warm.error();
  EXPECT_TRUE(warm->fromCache());
}

// Several processes compiling the same cell into one cache at once: every
// one gets a working cell, and the cache holds one intact entry.
TEST(Jit, ConcurrentProcessesShareTheCacheSafely) {
  TemporaryDir cache;
  std::vector<float> expected = runTraining(cellc_atr_image());
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      bool good = false;
      for (int round = 0; round < 3; ++round) {
        auto compiled = jit::compileFile(kAtrPath, withCache(cache.str()));
        good = compiled.ok() && runTraining(compiled->image()) == expected;
        if (!good)
          break;
      }
      _exit(good ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  auto warm = jit::compileFile(kAtrPath, withCache(cache.str()));
  ASSERT_TRUE(warm.ok()) << warm.error();
  EXPECT_TRUE(warm->fromCache());
  std::error_code ec;
  int files = 0;
  for (llvm::sys::fs::directory_iterator it(cache.str(), ec), end;
       it != end && !ec; it.increment(ec))
    ++files;
  EXPECT_EQ(files, 1) << "temporaries left behind";
}

} // namespace

TEST(Jit, GpuCodeHasTheAheadOfTimePlanAndEveryKernel) {
  // The GPU form of a cell runs the same plan as cellc's CPU object.
  auto code = cellc::jit::compileFileForGPU(kAtrPath, {});
  ASSERT_TRUE(code.ok()) << code.error();
  EXPECT_EQ(code->cellName, "atr");
  EXPECT_EQ(code->tables, tablesOf(cellc_atr_image()));
  int64_t kernels = cellc_atr_image().num_kernels;
  for (int64_t k = 0; k < kernels; ++k)
    EXPECT_NE(code->ptx.find(".entry cellc_atr_k" + std::to_string(k)),
              std::string::npos)
        << k;
  EXPECT_EQ(code->ptx.find(".entry cellc_atr_k" + std::to_string(kernels)),
            std::string::npos);
  EXPECT_NE(code->ptx.find(".target sm_80"), std::string::npos);

  auto bad = cellc::jit::compileSourceForGPU(
      "cell bad(x: [I]) {\n  state h: [H]\n  h' = sigmod(x)\n}\n", "bad.cell",
      {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("bad.cell:3:8: error: unknown function"),
            std::string::npos)
      << bad.error();
}
