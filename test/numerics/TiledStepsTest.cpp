//===- TiledStepsTest.cpp - The tiled forward schedule against LibTorch ---===//
//
// Runs with CELLRT_TILED_STEPS=1 (test/numerics/CMakeLists.txt): every cell
// with recurrent products takes the tiled schedule (runtime/TiledSteps.h)
// wherever H splits into blocks (H = 48: three blocks of 16 over the pool's
// threads; H = 128: two of 64), in inference, in training's forward and in
// backward, GRU with a meeting before each of its products, and must match
// the reference and LibTorch autograd as the default schedule does, over
// ragged lengths in both directions. Cells without a recurrent product
// (SRU, SR-NMT: a time scan) and a state too narrow to split keep the
// default schedule.
//
//===----------------------------------------------------------------------===//

#include "CellCheck.h"
#include "References.h"
#include "runtime/TiledSteps.h"

#include "atr.h"
#include "gru.h"
#include "lau.h"
#include "lstm.h"
#include "ran.h"
#include "rnn.h"
#include "srnmt.h"
#include "sru.h"

#include <gtest/gtest.h>

using namespace cellc_test;

namespace {

CellSize size(int64_t steps, int64_t batch, int64_t input, int64_t hidden) {
  CellSize s;
  s.steps = steps;
  s.batch = batch;
  s.dims = {{"H", hidden}, {"I", input}};
  return s;
}

/// Forward and gradients at sizes the schedule tiles; returns how many
/// calls ran tiled.
int64_t checkTiled(const cellrt_image &image, const Reference &reference) {
  int64_t before = cellrt::detail::tiledStepCalls();
  int64_t input = reference.inputIsHidden ? 48 : 20;
  std::vector<CellSize> sizes = {size(9, 5, input, 48), size(3, 2, 128, 128),
                                 size(8, 4, reference.inputIsHidden ? 32 : 7,
                                      32)};
  checkCellForward(image, reference, sizes);
  checkCellGradients(image, reference, sizes);
  return cellrt::detail::tiledStepCalls() - before;
}

int64_t checkNarrow(const cellrt_image &image, const Reference &reference) {
  int64_t before = cellrt::detail::tiledStepCalls();
  checkCellForward(image, reference,
                   {size(4, 3, reference.inputIsHidden ? 6 : 5, 6)});
  return cellrt::detail::tiledStepCalls() - before;
}

} // namespace

TEST(TiledSteps, IsOnInThisBinary) {
  EXPECT_EQ(cellrt::detail::tiledStepsMode(), cellrt::detail::TiledMode::On);
}

// Each check runs 4 cases per size (both directions, random and zero initial
// states), 3 sizes (the longest sequence 9, 3 and 8 steps long: both
// parities of the swapped buffers): 12 inference calls and 12 training
// forward + backward pairs, every one of the 36 tiled.
constexpr int64_t kTiledCalls = 36;

TEST(TiledSteps, AtrMatchesTheReference) {
  EXPECT_EQ(checkTiled(cellc_atr_image(), atrReference()), kTiledCalls);
}
TEST(TiledSteps, LstmMatchesTheReference) {
  EXPECT_EQ(checkTiled(cellc_lstm_image(), lstmReference()), kTiledCalls);
}
TEST(TiledSteps, LauMatchesTheReference) {
  EXPECT_EQ(checkTiled(cellc_lau_image(), lauReference()), kTiledCalls);
}
TEST(TiledSteps, RanMatchesTheReference) {
  EXPECT_EQ(checkTiled(cellc_ran_image(), ranReference()), kTiledCalls);
}
TEST(TiledSteps, RnnMatchesTheReference) {
  EXPECT_EQ(checkTiled(cellc_rnn_image(), rnnReference()), kTiledCalls);
}
TEST(TiledSteps, GruMatchesTheReferenceInTwoStages) {
  EXPECT_EQ(checkTiled(cellc_gru_image(), gruReference()), kTiledCalls);
}
TEST(TiledSteps, ScanCellsKeepTheDefaultSchedule) {
  EXPECT_EQ(checkTiled(cellc_sru_image(), sruReference()), 0);
  EXPECT_EQ(checkTiled(cellc_srnmt_image(), srnmtReference()), 0);
}
TEST(TiledSteps, NarrowStatesKeepTheDefaultSchedule) {
  EXPECT_EQ(checkNarrow(cellc_lstm_image(), lstmReference()), 0);
}
