//===- TiledStepsJitTest.cpp - Tiled steps against the default schedule ---===//
//
// Every cell of cells/ and the cells whose products read values of the same
// step (test/tools/Inputs/in-step-products.cell), compiled by the JIT, give
// the outputs, final states and gradients of cellrt's default schedule with
// the tiled steps (runtime/TiledSteps.h) on: H = 32 splits into two blocks,
// the longest sequence has an even number of steps (6; the LibTorch tests in
// TiledStepsTest.cpp have odd ones), both directions, inference and
// training. Cells the schedule does not cover must keep the default
// schedule: no recurrent product (SRU, SR-NMT; only their decoding steps'
// products run on the team, ScanCellStepsMultiplyOnTheTeam), an output not H
// wide (outproj), or a kernel that reads a value several H wide and splits it
// itself (deeptrans' [z; r], lstmh's four gates with one bias, peepout's
// [i; f; o]), which a block of H cannot hold.
//
//===----------------------------------------------------------------------===//

#include "CellRunner.h"
#include "jit/Jit.h"
#include "runtime/Gemm.h"
#include "runtime/TiledSteps.h"
#include "test/support/PlanText.h"

#include <cmath>
#include <optional>
#include <random>
#include <thread>

using namespace cellrt_test;

namespace {

struct Case {
  std::string file, cell;
  bool tiles;
};

std::string casePath(const Case &c) {
  return std::string(CELLC_SOURCE_DIR) + "/" + c.file;
}

class TiledStepsJit : public ::testing::TestWithParam<Case> {};

/// A case's cell compiled by the JIT (the image outlives the Cell).
struct LoadedCase {
  std::optional<cellc::jit::CompileResult> compiled;
  std::optional<Cell> cell;
};

void loadCase(const Case &c, LoadedCase &loaded) {
  cellc::jit::CompileOptions options;
  options.cellName = c.cell;
  options.cacheDir = "";
  loaded.compiled.emplace(cellc::jit::compileFile(casePath(c), options));
  ASSERT_TRUE(loaded.compiled->ok()) << loaded.compiled->error();
  Expected<Cell> cell = Cell::load((*loaded.compiled)->image());
  ASSERT_TRUE(cell.ok()) << cell.error();
  loaded.cell.emplace(std::move(*cell));
}

/// H = `hidden` (32: two blocks of 16 units), params scaled by 1/sqrt(H).
ProblemShape tiledShape(int64_t hidden = 32) {
  ProblemShape shape;
  shape.firstDim = hidden;
  shape.paramScale = 1 / std::sqrt(float(hidden));
  return shape;
}

/// Every element of `actual` within `tolerance` (relative beyond 1) of
/// `expected`.
void expectNear(const Results &actual, const Results &expected,
                float tolerance = 1e-5f) {
  ASSERT_EQ(actual.arrays.size(), expected.arrays.size());
  for (size_t i = 0; i < actual.arrays.size(); ++i)
    for (size_t j = 0; j < actual.arrays[i].size(); ++j)
      ASSERT_NEAR(actual.arrays[i][j], expected.arrays[i][j],
                  tolerance * std::max(1.0f, std::fabs(expected.arrays[i][j])))
          << "array " << i << " element " << j;
}

TEST_P(TiledStepsJit, MatchesTheDefaultSchedule) {
  const Case &c = GetParam();
  LoadedCase loaded;
  ASSERT_NO_FATAL_FAILURE(loadCase(c, loaded));
  const Cell *cell = &*loaded.cell;
  Problem problem(cell->getPlan(), 5, tiledShape());
  int64_t tiledCalls = 0;
  for (bool reverse : {false, true})
    for (bool train : {false, true}) {
      SCOPED_TRACE(std::string(reverse ? "reverse" : "forward") +
                   (train ? ", training" : ", inference"));
      cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Off);
      Results expected = run(*cell, problem, reverse, train);
      cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::On);
      int64_t before = cellrt::detail::tiledStepCalls();
      Results actual = run(*cell, problem, reverse, train);
      tiledCalls += cellrt::detail::tiledStepCalls() - before;
      expectNear(actual, expected);
    }
  cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
  // Inference, and training's forward and backward, in both directions.
  if (c.tiles)
    EXPECT_EQ(tiledCalls, 6);
  else
    EXPECT_EQ(tiledCalls, 0);
}

// PackedWeights keep the weights in the tiled steps' panels: the first
// inference call with them packs each product's weight (the input's, which
// inference computes per step and block, and the recurrent ones: LSTM's
// two, GRU's three), later calls pack none, and a call without them packs
// again.
// The panels are the same either way, so the results repeat exactly and
// agree with the unpacked call's.
TEST(TiledPanels, PackedWeightsKeepThePanelsOfTheirFirstCall) {
  for (auto [file, products] :
       {std::pair<const char *, int64_t>{"cells/lstm.cell", 2},
        {"cells/gru.cell", 3}}) {
    SCOPED_TRACE(file);
    LoadedCase loaded;
    ASSERT_NO_FATAL_FAILURE(loadCase(Case{file, "", true}, loaded));
    const Cell &cell = *loaded.cell;
    Problem problem(cell.getPlan(), 11, tiledShape());
    Expected<PackedWeights> packed = cell.packWeights(problem.paramArrays());
    ASSERT_TRUE(packed.ok()) << packed.error();
    cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::On);
    int64_t start = cellrt::detail::tiledPanelPacks();
    Results first = run(cell, problem, false, false, nullptr, &*packed);
    int64_t afterFirst = cellrt::detail::tiledPanelPacks();
    Results second = run(cell, problem, false, false, nullptr, &*packed);
    int64_t afterSecond = cellrt::detail::tiledPanelPacks();
    Results unpacked = run(cell, problem, false, false);
    int64_t afterUnpacked = cellrt::detail::tiledPanelPacks();
    cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
    EXPECT_EQ(afterFirst - start, products);
    EXPECT_EQ(afterSecond, afterFirst);
    EXPECT_EQ(afterUnpacked - afterSecond, products);
    ASSERT_EQ(first.arrays, second.arrays);
    expectNear(first, unpacked, 1e-6f);
  }
}

// H = 128 splits into blocks of 64 units, each gate of a block two panels
// of 32 columns: packed per call, kept in PackedWeights, in inference
// (with the input products per step) and in training, the tiled steps give
// the default schedule's results.
TEST(TiledPanels, BlocksOfTwoPanelsMatchTheDefaultSchedule) {
  for (const char *file :
       {"cells/lstm.cell", "cells/gru.cell", "cells/atr.cell"}) {
    SCOPED_TRACE(file);
    LoadedCase loaded;
    ASSERT_NO_FATAL_FAILURE(loadCase(Case{file, "", true}, loaded));
    const Cell &cell = *loaded.cell;
    Problem problem(cell.getPlan(), 13, tiledShape(128));
    Expected<PackedWeights> packed = cell.packWeights(problem.paramArrays());
    ASSERT_TRUE(packed.ok()) << packed.error();
    cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Off);
    Results inference = run(cell, problem, false, false);
    Results training = run(cell, problem, false, true);
    cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::On);
    int64_t before = cellrt::detail::tiledStepCalls();
    Results tiled = run(cell, problem, false, false);
    Results tiledPacked = run(cell, problem, false, false, nullptr, &*packed);
    Results tiledTraining = run(cell, problem, false, true);
    // Inference twice, training's forward and backward.
    EXPECT_EQ(cellrt::detail::tiledStepCalls() - before, 4);
    cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
    expectNear(tiled, inference);
    expectNear(tiledPacked, inference);
    expectNear(tiledTraining, training);
  }
}

// A decoding step (one step per row) tiles where the caller's PackedWeights
// keep the panels and its products outweigh the team's set-up
// (Execution::shortCallTiles): at H = 128 and 10 rows it does, on one
// thread and on a team of two, and gives the default schedule's results;
// without PackedWeights (the panels would be packed for one step), or at
// H = 32 (products of 83k multiply-adds for LSTM), it keeps the default
// schedule.
TEST(TiledPanels, DecodingStepsTileByPackedWeights) {
  for (const char *file :
       {"cells/lstm.cell", "cells/gru.cell", "cells/atr.cell"}) {
    LoadedCase loaded;
    ASSERT_NO_FATAL_FAILURE(loadCase(Case{file, "", true}, loaded));
    const Cell &cell = *loaded.cell;
    for (int64_t hidden : {128, 32})
      for (int threads : {1, 2}) {
        SCOPED_TRACE(std::string(file) + ", H = " + std::to_string(hidden) +
                     ", " + std::to_string(threads) + " threads");
        ProblemShape shape = tiledShape(hidden);
        shape.T = 1;
        shape.B = 10;
        shape.lengths.assign(shape.B, 1);
        Problem problem(cell.getPlan(), 17, shape);
        Expected<PackedWeights> packed =
            cell.packWeights(problem.paramArrays());
        ASSERT_TRUE(packed.ok()) << packed.error();
        cellrt::setNumThreads(threads);
        cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Off);
        Results expected = run(cell, problem, false, false, nullptr, &*packed);
        cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
        int64_t before = cellrt::detail::tiledStepCalls();
        Results unpacked = run(cell, problem, false, false);
        int64_t afterUnpacked = cellrt::detail::tiledStepCalls();
        Results step = run(cell, problem, false, false, nullptr, &*packed);
        int64_t afterPacked = cellrt::detail::tiledStepCalls();
        cellrt::setNumThreads(1);
        EXPECT_EQ(afterUnpacked, before);
        EXPECT_EQ(afterPacked - afterUnpacked, hidden == 128 ? 1 : 0);
        expectNear(unpacked, expected);
        expectNear(step, expected);
      }
  }
}

// A scan cell's decoding step (SRU, SR-NMT: no recurrent product) with
// PackedWeights runs its product of the step's inputs on the team, each
// member its own blocks of the weight (Execution::describeScanProducts),
// then the scan as before: on one thread and on two, in both directions,
// it gives the default schedule's results. Without PackedWeights, over
// three steps (a sequence: one product over every step), where the longest
// row is shorter than the call (its last step's products would not be
// computed), or in training it keeps the default schedule.
TEST(TiledPanels, ScanCellStepsMultiplyOnTheTeam) {
  struct Steps {
    int64_t steps, longest;
    bool tiles;
  };
  int threadsBefore = cellrt::getNumThreads();
  for (const char *file : {"cells/sru.cell", "cells/srnmt.cell"}) {
    LoadedCase loaded;
    ASSERT_NO_FATAL_FAILURE(loadCase(Case{file, "", false}, loaded));
    const Cell &cell = *loaded.cell;
    for (Steps call : {Steps{1, 1, true}, Steps{2, 2, true}, Steps{3, 3, false},
                       Steps{2, 1, false}})
      for (int threads : {1, 2})
        for (bool reverse : {false, true}) {
          SCOPED_TRACE(std::string(file) +
                       ", T = " + std::to_string(call.steps) + ", longest " +
                       std::to_string(call.longest) + ", " +
                       std::to_string(threads) + " threads" +
                       (reverse ? ", reverse" : ""));
          ProblemShape shape = tiledShape(128);
          shape.T = call.steps;
          shape.B = 10;
          // A row that ends early: the scan masks its last steps.
          shape.lengths.assign(shape.B, call.longest);
          shape.lengths[3] = 1;
          Problem problem(cell.getPlan(), 19, shape);
          Expected<PackedWeights> packed =
              cell.packWeights(problem.paramArrays());
          ASSERT_TRUE(packed.ok()) << packed.error();
          cellrt::setNumThreads(threads);
          cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Off);
          Results expected =
              run(cell, problem, reverse, false, nullptr, &*packed);
          Results expectedTraining = run(cell, problem, reverse, true);
          cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::On);
          int64_t before = cellrt::detail::tiledStepCalls();
          Results unpacked = run(cell, problem, reverse, false);
          Results training =
              run(cell, problem, reverse, true, nullptr, &*packed);
          int64_t untiled = cellrt::detail::tiledStepCalls();
          Results step = run(cell, problem, reverse, false, nullptr, &*packed);
          Results again = run(cell, problem, reverse, false, nullptr, &*packed);
          int64_t tiled = cellrt::detail::tiledStepCalls();
          cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
          EXPECT_EQ(untiled, before);
          EXPECT_EQ(tiled - untiled, call.tiles ? 2 : 0);
          expectNear(unpacked, expected);
          expectNear(training, expectedTraining);
          expectNear(step, expected);
          ASSERT_EQ(again.arrays, step.arrays);
        }
  }
  cellrt::setNumThreads(threadsBefore);
}

// One PackedWeights shared by four threads, each running sequences (the
// tiled steps, whose panels the first calls race to keep) and B=10 steps
// (oneDNN's matmul by the packed weights, whose primitives they race to
// make, each execution with its thread's scratchpad): every thread gets
// exactly what a call alone gets.
TEST(TiledPanels, PackedWeightsServeConcurrentCalls) {
  LoadedCase loaded;
  ASSERT_NO_FATAL_FAILURE(loadCase(Case{"cells/lstm.cell", "", true}, loaded));
  const Cell &cell = *loaded.cell;
  ProblemShape shape = tiledShape(64);
  shape.B = 10;
  shape.lengths = {6, 3, 1, 5, 6, 2, 4, 6, 5, 3};
  Problem problem(cell.getPlan(), 17, shape);
  Expected<PackedWeights> alone = cell.packWeights(problem.paramArrays());
  Expected<PackedWeights> shared = cell.packWeights(problem.paramArrays());
  ASSERT_TRUE(alone.ok() && shared.ok()) << alone.error();
  cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::On);
  Results sequence = run(cell, problem, false, false, nullptr, &*alone);
  Results step = runStep(cell, problem, &*alone);
  constexpr int kThreads = 4;
  std::vector<Results> sequences(kThreads), steps(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int repeat = 0; repeat < 3; ++repeat) {
        sequences[t] = run(cell, problem, false, false, nullptr, &*shared);
        steps[t] = runStep(cell, problem, &*shared);
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(sequences[t].arrays, sequence.arrays) << "thread " << t;
    EXPECT_EQ(steps[t].arrays, step.arrays) << "thread " << t;
  }
}

/// h' = h/2 + v1 + v0 and out = h' on active rows; h' = h and out = 0 past
/// a row's length. Arguments: state:h step:v1 seq:v0 next:h out.
void projectionStep(int64_t rowBegin, int64_t rowEnd, int64_t step,
                    const int32_t *lengths, const int64_t *dims,
                    float *const *ptrs, const int64_t *strides) {
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    auto row = [&](int i) { return ptrs[i] + r * strides[i]; };
    bool active = step < lengths[r];
    for (int64_t j = 0; j < dims[0]; ++j) {
      row(3)[j] = active ? 0.5f * row(0)[j] + row(1)[j] + row(2)[j] : row(0)[j];
      row(4)[j] = active ? row(3)[j] : 0.0f;
    }
  }
}

/// A cell whose hoisted input product v0 = A x the step kernel reads, and
/// whose recurrent product reads `recurrentInput`: the state (h), or v0
/// itself.
std::string projectionPlan(const std::string &recurrentInput) {
  return "cellc-plan 1\n"
         "cell proj\n"
         "dims H\n"
         "input x H\n"
         "state h H\n"
         "param A H H\n"
         "param U H H\n"
         "output H\n"
         "buffer seq v0 H\n"
         "buffer step v1 H\n"
         "weight W0 A\n"
         "weight W1 U\n"
         "pre gemm seq:v0 W0 input:x\n"
         "step gemm step:v1 W1 " +
         recurrentInput +
         "\n"
         "step kernel 0 state:h step:v1 seq:v0 next:h out\n";
}

// Tiled inference computes a hoisted input product per step and block
// only where step kernels alone read its buffer: here, where the recurrent
// product reads v0 too, the hoisted product runs over all steps first
// (one weight packed per call, not two), and both cells give the default
// schedule's results.
TEST(TiledPanels, InputProductsStayHoistedWhereAProductReadsThem) {
  const int64_t T = 4, B = 3, H = 32;
  const cellrt_kernel_fn kernels[] = {projectionStep};
  const char *const names[] = {"proj_step"};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-0.2f, 0.2f);
  auto fill = [&](int64_t count) {
    std::vector<float> values(count);
    for (float &value : values)
      value = uniform(rng);
    return values;
  };
  std::vector<float> x = fill(T * B * H), a = fill(H * H), u = fill(H * H);
  std::vector<int32_t> lengths = {4, 2, 3};
  for (auto [input, packs] :
       {std::pair<std::string, int64_t>{"state:h", 2}, {"seq:v0", 1}}) {
    SCOPED_TRACE(input);
    std::string plan = projectionPlan(input);
    Expected<Cell> cell =
        Cell::load({cellc_test::planTables(plan.c_str()), kernels, names, 1});
    ASSERT_TRUE(cell.ok()) << cell.error();
    auto forward = [&](cellrt::detail::TiledMode mode) {
      std::vector<float> out(T * B * H, -1.0f);
      ForwardArgs args;
      args.inputs = {{x.data(), {T, B, H}}};
      args.lengths = lengths.data();
      args.params = {{"A", {a.data(), {H, H}}}, {"U", {u.data(), {H, H}}}};
      args.output = {out.data(), {T, B, H}};
      cellrt::detail::setTiledSteps(mode);
      Status status = cell->forward(args);
      EXPECT_TRUE(status.ok()) << status.message();
      return out;
    };
    std::vector<float> expected = forward(cellrt::detail::TiledMode::Off);
    int64_t calls = cellrt::detail::tiledStepCalls();
    int64_t packed = cellrt::detail::tiledPanelPacks();
    std::vector<float> actual = forward(cellrt::detail::TiledMode::On);
    cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
    EXPECT_EQ(cellrt::detail::tiledStepCalls() - calls, 1);
    EXPECT_EQ(cellrt::detail::tiledPanelPacks() - packed, packs);
    for (size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(actual[i], expected[i], 1e-5f) << "element " << i;
  }
}

// The per-step schedule packs each recurrent weight for oneDNN's matmul
// once per call where a call has 16 steps or more and 4-256 rows, and
// multiplies by those copies (backward's state-gradient products stay on
// sgemm in f32; Bf16ProductsTest counts bf16's): LSTM's and GRU's results,
// inference and training, stay within rounding of the tiled steps', which
// never pack that way.
TEST(PackedPerCall, PerStepProductsMatchTheTiledSteps) {
  for (const char *file : {"cells/lstm.cell", "cells/gru.cell"}) {
    SCOPED_TRACE(file);
    LoadedCase loaded;
    ASSERT_NO_FATAL_FAILURE(loadCase(Case{file, "", true}, loaded));
    const Cell &cell = *loaded.cell;
    ProblemShape shape = tiledShape();
    shape.T = 20;
    shape.B = 5;
    shape.lengths = {20, 7, 16, 1, 19};
    Problem problem(cell.getPlan(), 23, shape);
    for (bool train : {false, true}) {
      SCOPED_TRACE(train ? "training" : "inference");
      cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::On);
      int64_t tiledCalls = cellrt::detail::tiledStepCalls();
      Results tiled = run(cell, problem, false, train);
      EXPECT_GT(cellrt::detail::tiledStepCalls(), tiledCalls);
      cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Off);
      int64_t packs = PackedProduct::packedSoFar();
      int64_t multiplies = PackedProduct::multipliedSoFar();
      Results perStep = run(cell, problem, false, train);
      cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
      EXPECT_GT(PackedProduct::packedSoFar(), packs);
      // At least one packed product per step of the longest sequence.
      EXPECT_GE(PackedProduct::multipliedSoFar() - multiplies, 20);
      expectNear(perStep, tiled);
    }
  }
}

// The tiled steps fail only before their first step; the call then runs
// the default schedule, inference with the input products the tiles
// would have computed per step (Execution::forward runs them first), and
// backward per step. Its results are the default schedule's, bit for bit.
TEST(TiledFallback, AFailedStartRunsTheDefaultSchedule) {
  for (const char *file : {"cells/lstm.cell", "cells/gru.cell"}) {
    SCOPED_TRACE(file);
    LoadedCase loaded;
    ASSERT_NO_FATAL_FAILURE(loadCase(Case{file, "", true}, loaded));
    const Cell &cell = *loaded.cell;
    Problem problem(cell.getPlan(), 31, tiledShape());
    for (bool train : {false, true}) {
      SCOPED_TRACE(train ? "training" : "inference");
      // The fallback first: inference reuses the cell's buffers, which a
      // default-schedule call before it would have filled already.
      cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::On);
      cellrt::detail::failTiledStepsForTesting(true);
      int64_t tiled = cellrt::detail::tiledStepCalls();
      int64_t failures = cellrt::detail::tiledStepFailures();
      Results fallback = run(cell, problem, false, train);
      cellrt::detail::failTiledStepsForTesting(false);
      EXPECT_EQ(cellrt::detail::tiledStepCalls(), tiled);
      // Forward, and in training backward too, tried and fell back.
      EXPECT_EQ(cellrt::detail::tiledStepFailures() - failures, train ? 2 : 1);
      cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Off);
      Results reference = run(cell, problem, false, train);
      cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
      ASSERT_EQ(fallback.arrays.size(), reference.arrays.size());
      for (size_t a = 0; a < reference.arrays.size(); ++a)
        EXPECT_EQ(fallback.arrays[a], reference.arrays[a]) << "array " << a;
    }
  }
}

// README: each schedule gives the same bits at any thread count. The
// per-step schedule's products by weights packed per call are shared by
// two threads from 16 MFLOP on (here [64, 256] by [1024, 256]ᵀ, 34 MFLOP):
// 1 and 2 threads give the same outputs, states and gradients.
TEST(PackedPerCall, OneAndTwoThreadsGiveTheSameBits) {
  LoadedCase loaded;
  ASSERT_NO_FATAL_FAILURE(loadCase(Case{"cells/lstm.cell", "", true}, loaded));
  const Cell &cell = *loaded.cell;
  ProblemShape shape = tiledShape(256);
  shape.T = 16;
  shape.B = 64;
  shape.lengths.assign(64, 16);
  shape.lengths[3] = 5;
  Problem problem(cell.getPlan(), 29, shape);
  int threadsBefore = cellrt::getNumThreads();
  cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Off);
  std::vector<Results> results;
  for (int threads : {1, 2}) {
    cellrt::setNumThreads(threads);
    int64_t multiplies = PackedProduct::multipliedSoFar();
    results.push_back(run(cell, problem, false, /*train=*/true));
    EXPECT_GE(PackedProduct::multipliedSoFar() - multiplies, 16);
  }
  cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
  cellrt::setNumThreads(threadsBefore);
  EXPECT_EQ(results[0].arrays, results[1].arrays);
}

// A team of one multiplying 32 rows or more prefetches each product's
// next panel (TiledSteps.cpp, Member::prefetch) with libxsmm's prefetching
// kernels, which must multiply exactly as the others do: inference on one
// thread (prefetching) and on two (not) gives the same bits, within 1e-5 of
// the default schedule; a 10-row call on one thread does not prefetch.
TEST(TiledPanels, PrefetchingPanelsGiveTheSameBits) {
  for (const char *file : {"cells/lstm.cell", "cells/gru.cell"}) {
    SCOPED_TRACE(file);
    LoadedCase loaded;
    ASSERT_NO_FATAL_FAILURE(loadCase(Case{file, "", true}, loaded));
    const Cell &cell = *loaded.cell;
    ProblemShape shape = tiledShape(128);
    shape.B = 32;
    shape.lengths.assign(shape.B, shape.T);
    shape.lengths[5] = 2;
    Problem problem(cell.getPlan(), 31, shape);
    int threadsBefore = cellrt::getNumThreads();
    cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Off);
    Results expected = run(cell, problem, false, false);
    cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::On);
    std::vector<Results> results;
    std::vector<int64_t> prefetching;
    for (int threads : {1, 2}) {
      cellrt::setNumThreads(threads);
      int64_t before = cellrt::detail::tiledPrefetchingCalls();
      results.push_back(run(cell, problem, false, false));
      prefetching.push_back(cellrt::detail::tiledPrefetchingCalls() - before);
    }
    cellrt::setNumThreads(1);
    ProblemShape fewer = tiledShape(128);
    fewer.B = 10;
    fewer.lengths.assign(fewer.B, fewer.T);
    int64_t before = cellrt::detail::tiledPrefetchingCalls();
    run(cell, Problem(cell.getPlan(), 31, fewer), false, false);
    int64_t fewerPrefetching = cellrt::detail::tiledPrefetchingCalls() - before;
    cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
    cellrt::setNumThreads(threadsBefore);
    EXPECT_EQ(prefetching, (std::vector<int64_t>{1, 0}));
    EXPECT_EQ(fewerPrefetching, 0);
    EXPECT_EQ(results[0].arrays, results[1].arrays);
    expectNear(results[0], expected);
  }
}

// cell-store-sole-gradients: backward kernels store gradients the runtime
// no longer zeroes, so a tape's memory keeps the last call's values. After
// a call where every sequence is T long, a call whose longest sequence is
// half as long must still give the gradients a fresh tape gives: kernels
// store zeros on inactive rows, and the runtime zeroes the rows of steps
// the loop never reaches. Both schedules, both directions.
TEST(StoredGradients, AReusedTapeGivesAFreshTapesGradients) {
  for (const char *file : {"cells/sru.cell", "cells/gru.cell",
                           "cells/lstm.cell", "cells/srnmt.cell"}) {
    SCOPED_TRACE(file);
    LoadedCase loaded;
    ASSERT_NO_FATAL_FAILURE(loadCase(Case{file, "", true}, loaded));
    const Cell &cell = *loaded.cell;
    ProblemShape full = tiledShape(), ragged = tiledShape();
    full.lengths = {6, 6, 6, 6};
    ragged.lengths = {3, 2, 1, 3};
    Problem first(cell.getPlan(), 7, full), second(cell.getPlan(), 7, ragged);
    for (auto mode : {cellrt::detail::TiledMode::Off,
                      cellrt::detail::TiledMode::On})
      for (bool reverse : {false, true}) {
        cellrt::detail::setTiledSteps(mode);
        Tape reused;
        run(cell, first, reverse, /*train=*/true, &reused);
        Results again = run(cell, second, reverse, /*train=*/true, &reused);
        Results fresh = run(cell, second, reverse, /*train=*/true);
        ASSERT_EQ(again.arrays.size(), fresh.arrays.size());
        for (size_t i = 0; i < again.arrays.size(); ++i)
          ASSERT_EQ(again.arrays[i], fresh.arrays[i])
              << "array " << i << (reverse ? ", reverse" : ", forward")
              << (mode == cellrt::detail::TiledMode::On ? ", tiled" : "");
      }
  }
  cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
}

// The executor asks for the schedule per call: under the default mode a
// one-thread inference call tiles and a one-thread training call (forward
// and backward) does not; on two threads training tiles both passes.
TEST(TiledMode, AutoChoosesTheScheduleForEachCall) {
  using namespace cellrt::detail;
  LoadedCase loaded;
  ASSERT_NO_FATAL_FAILURE(loadCase(Case{"cells/atr.cell", "", true}, loaded));
  const Cell &cell = *loaded.cell;
  Problem problem(cell.getPlan(), 5, tiledShape());
  int threadsBefore = cellrt::getNumThreads();
  setTiledSteps(TiledMode::Auto);
  auto tiledCallsOf = [&](int threads, bool train) {
    cellrt::setNumThreads(threads);
    int64_t before = tiledStepCalls();
    run(cell, problem, /*reverse=*/false, train);
    return tiledStepCalls() - before;
  };
  EXPECT_EQ(tiledCallsOf(1, /*train=*/false), 1);
  EXPECT_EQ(tiledCallsOf(1, /*train=*/true), 0);
  EXPECT_EQ(tiledCallsOf(2, /*train=*/true), 2);
  cellrt::setNumThreads(threadsBefore);
}

// The default mode tiles where bench/README.md measured the tiles faster:
// every call on a team of two or more threads, inference on one.
TEST(TiledMode, AutoKeepsOneThreadTrainingOnTheDefaultSchedule) {
  using namespace cellrt::detail;
  int threadsBefore = cellrt::getNumThreads();
  setTiledSteps(TiledMode::Auto);
  cellrt::setNumThreads(1);
  EXPECT_TRUE(tiledStepsWanted(/*training=*/false));
  EXPECT_FALSE(tiledStepsWanted(/*training=*/true));
  cellrt::setNumThreads(2);
  EXPECT_TRUE(tiledStepsWanted(/*training=*/false));
  EXPECT_TRUE(tiledStepsWanted(/*training=*/true));
  setTiledSteps(TiledMode::Off);
  EXPECT_FALSE(tiledStepsWanted(/*training=*/false));
  setTiledSteps(TiledMode::On);
  cellrt::setNumThreads(1);
  EXPECT_TRUE(tiledStepsWanted(/*training=*/true));
  setTiledSteps(TiledMode::Auto);
  cellrt::setNumThreads(threadsBefore);
}

const char *kInStep = "test/tools/Inputs/in-step-products.cell";

INSTANTIATE_TEST_SUITE_P(
    Cells, TiledStepsJit,
    ::testing::Values(Case{"cells/atr.cell", "", true},
                      Case{"cells/gru.cell", "", true},
                      Case{"cells/lstm.cell", "", true},
                      Case{"cells/lau.cell", "", true},
                      Case{"cells/ran.cell", "", true},
                      Case{"cells/rnn.cell", "", true},
                      Case{"cells/deeptrans.cell", "", false},
                      Case{"cells/sru.cell", "", false},
                      Case{"cells/srnmt.cell", "", false},
                      Case{kInStep, "twolevel", true},
                      Case{kInStep, "lstmh", false},
                      Case{kInStep, "peepout", false},
                      Case{kInStep, "outproj", false}),
    [](const ::testing::TestParamInfo<Case> &info) {
      std::string name = info.param.cell.empty() ? info.param.file
                                                 : info.param.cell;
      name = name.substr(name.rfind('/') + 1);
      return name.substr(0, name.find('.'));
    });

} // namespace
