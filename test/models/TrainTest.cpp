//===- TrainTest.cpp - Training on the embedded task; exact resume --------===//

#include "models/common/Math.h"
#include "models/nmt/Trainer.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <tuple>

using namespace nmt;

namespace {

// Every test in this binary runs single-threaded: tiny GEMMs on a loaded
// 2-core machine are an order of magnitude slower with OpenMP spinning.
[[maybe_unused]] const bool singleThreaded = setThreads(1);

TrainOptions tinyOptions(const std::string &name) {
  TrainOptions o;
  o.task = "numbers";
  o.taskTrain = 2000;
  o.taskValid = 100;
  o.taskTest = 100;
  o.taskMax = 9999;
  o.model.emb = 32;
  o.model.hidden = 48;
  o.model.att = 32;
  o.model.readout = 48;
  o.model.dropout = 0.1f;
  o.lr = 5e-3f;
  o.maxTokens = 600;
  o.epochs = 100;
  o.patience = 0;
  o.lrDecay = "none";
  o.progress = false;
  o.logEvery = 0;
  o.out = testing::TempDir() + "nmt-" + name + ".ckpt";
  return o;
}

} // namespace

// A few hundred updates at tiny sizes: the loss falls and greedy BLEU on
// the validation split (German number words, multi-bleu style) beats a
// floor well under what was measured when the test was written.
TEST(Train, LossFallsAndBleuBeatsFloor) {
  TrainOptions o = tinyOptions("train");
  o.maxUpdates = 300;
  TrainData data = loadTrainData(o);
  Session session(o, data);
  std::vector<double> losses;
  session.onUpdate = [&](int64_t, double loss) { losses.push_back(loss); };
  session.train(data);
  ASSERT_EQ(int64_t(losses.size()), o.maxUpdates);
  double first = 0, last = 0;
  for (int i = 0; i < 20; ++i) {
    first += losses[i] / 20;
    last += losses[losses.size() - 1 - i] / 20;
  }
  std::printf("loss: first 20 updates %.3f, last 20 %.3f\n", first, last);
  EXPECT_LT(last, 0.3 * first);
  double ppl = 0, bleu = 0;
  session.validate(data.validSrc, data.validTgt, ppl, bleu, 1);
  std::printf("valid perplexity %.3f, BLEU %.2f\n", ppl, bleu);
  EXPECT_GT(bleu, 50.0);
  std::vector<std::string> out = session.translate({"twenty-one"}, 3, 1.0f, 8);
  std::printf("twenty-one -> %s\n", out[0].c_str());
  std::remove(o.out.c_str());
}

// Training N updates straight equals training k, saving, loading the
// checkpoint and training the remaining N - k (across an epoch boundary,
// with dropout), bit for bit.
TEST(Train, ResumeContinuesExactly) {
  TrainOptions o = tinyOptions("resume-a");
  o.taskTrain = 150;
  o.taskValid = 10;
  o.maxTokens = 300;
  o.model.emb = 8;
  o.model.hidden = 12;
  o.model.att = 8;
  o.model.readout = 8;
  o.maxUpdates = 14;
  o.lrDecay = "plateau";
  TrainData data = loadTrainData(o);
  Session straight(o, data);
  straight.train(data);
  ASSERT_GT(straight.state.epoch, 0) << "the run must cross an epoch";

  TrainOptions p = o;
  p.out = testing::TempDir() + "nmt-resume-b.ckpt";
  p.maxUpdates = 5;
  {
    Session first(p, data);
    first.train(data);
  }
  auto resumed = Session::load(p.out);
  EXPECT_EQ(resumed->state.updates, 5);
  resumed->options.maxUpdates = o.maxUpdates;
  resumed->train(data);
  EXPECT_EQ(resumed->state.updates, straight.state.updates);
  EXPECT_EQ(resumed->state.epoch, straight.state.epoch);
  EXPECT_EQ(resumed->state.lr, straight.state.lr);
  auto a = straight.model->params(), b = resumed->model->params();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i]->value, b[i]->value) << a[i]->name;
    EXPECT_EQ(a[i]->m, b[i]->m) << a[i]->name;
  }
  // The loaded checkpoint translates like the live session.
  auto again = Session::load(o.out);
  EXPECT_EQ(again->translate({"five hundred six"}, 2, 1.0f, 4),
            straight.translate({"five hundred six"}, 2, 1.0f, 4));
  for (const auto &path : {o.out, p.out, o.out + ".best", p.out + ".best",
                           o.out + ".log", p.out + ".log"})
    std::remove(path.c_str());
}

// Seed 1 of the 128-wide Multi30k run: greedy BLEU 1.52, 1.15, 1.21, 1.38
// while perplexity fell 140, 80, 67, 63. By BLEU alone the plateau decay
// halved the rate three times and --patience 3 stopped the run; by
// perplexity (or either) every epoch was progress.
TEST(Train, PlateauMetricDecidesWhatCountsAsProgress) {
  std::vector<double> earlier = {140.2, 80.1, 67.2};
  EXPECT_FALSE(madeProgress("bleu", false, earlier, 62.7));
  EXPECT_TRUE(madeProgress("ppl", false, earlier, 62.7));
  EXPECT_TRUE(madeProgress("either", false, earlier, 62.7));
  // Perplexity worse than its best so far, BLEU a new best.
  EXPECT_TRUE(madeProgress("bleu", true, earlier, 70.0));
  EXPECT_FALSE(madeProgress("ppl", true, earlier, 70.0));
  EXPECT_TRUE(madeProgress("either", true, earlier, 70.0));
  EXPECT_FALSE(madeProgress("either", false, earlier, 70.0));
  // The first epoch always counts, whichever the metric.
  EXPECT_TRUE(madeProgress("ppl", false, {}, 300.0));
  // A NaN epoch (--skip-nonfinite) is no best to beat, and is no progress.
  EXPECT_TRUE(madeProgress("ppl", false, {140.2, NAN}, 90.0));
  EXPECT_TRUE(madeProgress("ppl", false, {NAN}, 90.0));
  EXPECT_FALSE(madeProgress("ppl", false, {140.2}, NAN));
}

/// (update, valid_bleu, event) of every validation in the JSON-lines log.
std::vector<std::tuple<int64_t, double, std::string>>
validations(const std::string &path) {
  std::vector<std::tuple<int64_t, double, std::string>> found;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json event = nlohmann::json::parse(line);
    if (event.contains("valid_bleu"))
      found.push_back({event["update"].get<int64_t>(),
                       event["valid_bleu"].get<double>(),
                       event["event"].get<std::string>()});
  }
  return found;
}

// OUT.best is the best BLEU of every validation: a run once scored 78.49 at
// a --valid-every validation and OUT.best kept its epoch end's 74.63.
TEST(Train, BestCheckpointIsTheBestOfEveryValidation) {
  TrainOptions o = tinyOptions("best-of-all");
  o.taskTrain = 1000;
  o.taskValid = 30;
  // 11 updates an epoch, so no validation falls on an epoch's end; the
  // best (BLEU 7.57) is update 87's, epoch 8 ends at 6.89.
  o.epochs = 8;
  o.validEvery = 3;
  for (const std::string &suffix : {"", ".best", ".jsonl", ".log"})
    std::remove((o.out + suffix).c_str());
  TrainData data = loadTrainData(o);
  Session session(o, data);
  session.train(data);
  auto found = validations(o.out + ".jsonl");
  ASSERT_FALSE(found.empty());
  auto best = found.front();
  for (const auto &validation : found)
    if (std::get<1>(validation) > std::get<1>(best))
      best = validation;
  // A set-up whose best is a mid-epoch validation, or the test proves
  // nothing.
  ASSERT_EQ(std::get<2>(best), "validation");
  ASSERT_GT(std::get<1>(best), 1.0);
  auto saved = Session::load(o.out + ".best");
  EXPECT_EQ(saved->state.updates, std::get<0>(best));
  EXPECT_NEAR(saved->state.bestBleu, std::get<1>(best), 1e-4);
}

// The option goes through the checkpoint's options map, and a bad value is
// refused with the option's name (old checkpoints, without it, read bleu).
TEST(Train, PlateauMetricSurvivesTheCheckpointMap) {
  TrainOptions o = tinyOptions("plateau");
  o.plateauMetric = "either";
  EXPECT_EQ(TrainOptions::fromMap(o.toMap()).plateauMetric, "either");
  auto map = o.toMap();
  map.erase("plateau-metric");
  EXPECT_EQ(TrainOptions::fromMap(map).plateauMetric, "bleu");
  map["plateau-metric"] = "loss";
  try {
    TrainOptions::fromMap(map);
    ADD_FAILURE() << "plateau-metric=loss was accepted";
  } catch (const DataError &error) {
    EXPECT_NE(std::string(error.what()).find("--plateau-metric"),
              std::string::npos)
        << error.what();
  }
}

// Issue #47: bf16 training (every product's operands rounded to bfloat16,
// f32 sums and master weights) follows f32's loss. 50 updates from the same
// seed and batches: each update's loss within 1% of f32's, the last ten's
// mean within 0.5%; and not equal, so the products did run in bf16.
TEST(Train, Bf16LossFollowsF32For50Updates) {
  auto losses = [](const std::string &precision) {
    TrainOptions o = tinyOptions("precision-" + precision);
    o.maxUpdates = 50;
    o.precision = precision;
    TrainData data = loadTrainData(o);
    Session session(o, data);
    std::vector<double> seen;
    session.onUpdate = [&](int64_t, double loss) { seen.push_back(loss); };
    session.train(data);
    return seen;
  };
  std::vector<double> f32 = losses("f32"), bf16 = losses("bf16");
  // A session sets the process's product precision: leave it at f32 for
  // the tests after this one in the same process.
  models::setProductPrecision(cellrt::Precision::F32);
  ASSERT_EQ(f32.size(), 50u);
  ASSERT_EQ(bf16.size(), 50u);
  double largest = 0, lastF32 = 0, lastBf16 = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    largest = std::max(largest, std::abs(bf16[i] - f32[i]) / f32[i]);
    if (i >= 40) {
      lastF32 += f32[i] / 10;
      lastBf16 += bf16[i] / 10;
    }
  }
  EXPECT_LT(largest, 0.01);
  EXPECT_GT(largest, 1e-6);
  EXPECT_LT(std::abs(lastBf16 - lastF32) / lastF32, 0.005);
  std::printf("bf16 against f32 over 50 updates: largest relative difference "
              "%.2e, last ten's mean %.4f against %.4f\n",
              largest, lastBf16, lastF32);
}
