//===- DeepEncoderTest.cpp - DeepLAU's encoder directions ------------------===//

#include "models/common/Cells.h"
#include "models/common/Math.h"
#include "models/common/Recurrent.h"
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
  ModelConfig config;
  config.arch = "deep";
  config.encLayers = layers;
  config.deepFirst = firstBackward ? "backward" : "forward";
  SourceEncoder encoder(config, models::loadCell("lau"), I, H, store);
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

// --between-layers tanh: layer 2 reads tanh of layer 1's output, exactly
// (an ATR state is unbounded). Checked against the layers run one by one.
TEST(DeepEncoder, UpperLayersReadTanhOfTheLayerBelow) {
  const int64_t T = 5, B = 2, I = 3, H = 4;
  const cellrt::Cell &cell = models::loadCell("atr");
  models::ParamStore store;
  models::EncoderShape shape{I, H};
  shape.layers = 2;
  shape.squashBetweenLayers = true;
  models::SequenceEncoder stack(cell, "enc", shape, store);
  models::ParamStore apartStore;
  models::CellLayer first(cell, "enc.l0.fwd", I, H, apartStore),
      second(cell, "enc.l1.fwd", H, H, apartStore);
  models::Rng rng(5);
  for (models::Param *p : store.all()) {
    models::uniformInit(p->value, 0.9f, rng);
    apartStore.find(p->name)->value = p->value;
  }
  std::vector<float> x(T * B * I);
  models::uniformInit(x, 2.f, rng);
  std::vector<int32_t> lengths = {5, 3};
  std::vector<float> out(T * B * H), below(T * B * H), apart(T * B * H);
  models::SequenceEncoder::Trace trace;
  stack.forward(x.data(), lengths.data(), T, B, out.data(), trace, false);
  models::CellTrace t1, t2;
  first.forward({{x.data()}, lengths.data(), T, B, {}, below.data()}, t1,
                false);
  models::tanhInPlace(below.data(), T * B * H);
  second.forward({{below.data()}, lengths.data(), T, B, {}, apart.data()}, t2,
                 false);
  for (int64_t i = 0; i < T * B * H; ++i)
    EXPECT_FLOAT_EQ(out[i], apart[i]) << i;
}

// A checkpoint from before --deep-first ran its first layer backward, and
// one from before --between-layers passed raw states: each loads as it
// trained.
TEST(DeepEncoder, OldCheckpointsKeepTheirWiring) {
  TrainOptions o;
  auto map = o.toMap();
  EXPECT_EQ(TrainOptions::fromMap(map).model.deepFirst, "forward");
  EXPECT_EQ(TrainOptions::fromMap(map).model.betweenLayers, "tanh");
  map.erase("deep-first");
  map.erase("between-layers");
  EXPECT_EQ(TrainOptions::fromMap(map).model.deepFirst, "backward");
  EXPECT_EQ(TrainOptions::fromMap(map).model.betweenLayers, "raw");
  map["deep-first"] = "sideways";
  EXPECT_THROW(TrainOptions::fromMap(map), DataError);
}

} // namespace
