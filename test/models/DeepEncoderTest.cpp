//===- DeepEncoderTest.cpp - DeepLAU's encoder directions ------------------===//

#include "models/common/Cells.h"
#include "models/common/Math.h"
#include "models/nmt/SourceEncoder.h"
#include "models/nmt/Trainer.h"

#include <gtest/gtest.h>

using namespace nmt;

namespace {

/// The output at step 0 of an `layers`-layer deep encoder over one sentence
/// of T = 4 steps whose last input is `last`.
std::vector<float> firstStep(int64_t layers, bool firstBackward, float last) {
  const int64_t T = 4, B = 1, I = 3, H = 5;
  models::ParamStore store;
  SourceEncoder encoder("deep", models::loadCell("lau"), I, H, layers,
                        firstBackward, store);
  models::Rng rng(3);
  for (models::Param *p : store.all())
    models::uniformInit(p->value, 0.5f, rng);
  std::vector<float> input(T * B * I, 0.25f), output(T * B * H);
  for (int64_t k = 0; k < I; ++k)
    input[(T - 1) * I + k] = last;
  std::vector<int32_t> lengths = {int32_t(T)};
  encoder.forward(input.data(), lengths.data(), T, B, output.data(), false);
  return std::vector<float>(output.begin(), output.begin() + H);
}

// LAU §3.4: d = (-1)^l, and d = -1 reads h_{t-1}: the first layer runs
// forward, so its output at step 0 cannot depend on the last word (before
// 2026-11-28 it ran backward; --deep-first backward keeps that).
TEST(DeepEncoder, FirstLayerRunsForwardAsThePaperSays) {
  EXPECT_EQ(firstStep(1, false, 0.25f), firstStep(1, false, -0.9f));
  EXPECT_NE(firstStep(1, true, 0.25f), firstStep(1, true, -0.9f));
  // Three layers: forward, backward, forward; the second sees the end.
  EXPECT_NE(firstStep(3, false, 0.25f), firstStep(3, false, -0.9f));
}

// A checkpoint from before --deep-first ran its first layer backward, and
// loads as it trained.
TEST(DeepEncoder, OldCheckpointsKeepTheirDirection) {
  TrainOptions o;
  auto map = o.toMap();
  EXPECT_EQ(TrainOptions::fromMap(map).model.deepFirst, "forward");
  map.erase("deep-first");
  EXPECT_EQ(TrainOptions::fromMap(map).model.deepFirst, "backward");
  map["deep-first"] = "sideways";
  EXPECT_THROW(TrainOptions::fromMap(map), DataError);
}

} // namespace
