//===- NliTest.cpp - The NLI models: gradients, data errors, training ----===//

#include "models/common/Cells.h"
#include "models/nli/Training.h"

#include "test/models/ParamChecks.h"
#include "test/models/TestCells.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

using namespace nli;
using models::DataError;
using models::Rng;

namespace {

Batch tinyBatch() {
  std::vector<Example> examples = {
      {{4, 5, 6, 7}, {4, 5}, 0},
      {{8, 4}, {7, 4, 5, 6, 9}, 2},
      {{5, 6, 7}, {6}, 1},
  };
  return makeBatch(examples, {0, 1, 2});
}

class NliGradientTest : public ::testing::TestWithParam<std::string> {};

TEST_P(NliGradientTest, MatchesCentralDifferences) {
  ModelConfig config;
  std::string kind = GetParam();
  config.kind = kind == "bow" ? "bow" : "attention";
  config.cell = kind == "bow" ? "atr" : kind;
  config.vocab = 10;
  config.emb = 4;
  config.hidden = 5;
  config.dropout = 0;
  const cellrt::Cell *cell =
      config.kind == "attention" ? &models::loadCell(config.cell) : nullptr;
  Model model(config, cell);
  Rng rng(6);
  model.initialize(rng.next(), cellrt::InitScheme::uniform(0.5f));
  Batch batch = tinyBatch();
  models::zeroGrads(model.params().all());
  model.loss(batch, true, nullptr);
  modeltest::Worst worst = modeltest::compareWithFiniteDifferences(
      model.params().all(),
      [&] { return model.loss(batch, false, nullptr) / double(batch.B); },
      1e-2f);
  EXPECT_LE(worst.error, 1e-2) << worst.where;
}

INSTANTIATE_TEST_SUITE_P(Models, NliGradientTest,
                         ::testing::Values("bow", "atr", "gru", "lstm"));

std::string writeTemp(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

std::string errorOf(const std::function<void()> &body) {
  try {
    body();
  } catch (const DataError &error) {
    return error.what();
  }
  return "no error";
}

/// A tiny attention model over cells/lstm.cell.
ModelConfig tinyLstmConfig() {
  ModelConfig config;
  config.cell = "lstm";
  config.vocab = 10;
  config.emb = 4;
  config.hidden = 5;
  return config;
}

// A cell's declared forget bias 1 holds in nli's model too.
TEST(NliInit, DeclaredForgetBiasIsOne) {
  ModelConfig config = tinyLstmConfig();
  config.cell = modeltest::kLstmForgetBiasOne;
  Model model(config, &models::loadCell(modeltest::kLstmForgetBiasOne));
  model.initialize(3, cellrt::InitScheme::uniform(0.1f));
  int found = 0;
  for (models::Param *p : model.params().all())
    if (p->name.size() > 3 && p->name.substr(p->name.size() - 3) == ".bf") {
      ++found;
      for (float x : p->value)
        ASSERT_EQ(x, 1.f) << p->name;
    }
  EXPECT_EQ(found, 2); // premise and hypothesis encoders
}

// The same seed gives nli's model the same params, another seed others.
TEST(NliInit, SameSeedSameParamsOtherSeedOthers) {
  ModelConfig config = tinyLstmConfig();
  const cellrt::Cell *cell = &models::loadCell("lstm");
  Model a(config, cell), b(config, cell), c(config, cell);
  a.initialize(3, cellrt::InitScheme::fanIn());
  b.initialize(3, cellrt::InitScheme::fanIn());
  c.initialize(4, cellrt::InitScheme::fanIn());
  auto pa = a.params().all(), pb = b.params().all(), pc = c.params().all();
  ASSERT_EQ(pa.size(), pc.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i]->value, pb[i]->value) << pa[i]->name;
    if (pa[i]->init.isNone())
      EXPECT_NE(pa[i]->value, pc[i]->value) << pa[i]->name;
  }
}

TEST(NliCorpus, ReadsSickAndSnliAndNamesBadLines) {
  std::string sick = writeTemp("sick.tsv", "A man runs\tA person moves\t0\n"
                                           "Cats sleep.\tDogs bark\t2\n");
  auto pairs = readSplit(sick.substr(0, sick.size() - 4), true);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[1].premise, (std::vector<std::string>{"cats", "sleep", "."}));
  EXPECT_EQ(pairs[1].label, Contradiction);
  std::string bad = writeTemp("bad.tsv", "a\tb\t0\na\tb\tmaybe\n");
  EXPECT_EQ(errorOf([&] { readSplit(bad.substr(0, bad.size() - 4), true); }),
            bad + ":2: unknown label 'maybe'");
  std::string columns = writeTemp("columns.tsv", "a\tb\n");
  EXPECT_NE(errorOf([&] { readSplit(columns.substr(0, columns.size() - 4), true); })
                .find(":1: 2 tab-separated columns, expected 3"),
            std::string::npos);
  std::string empty = writeTemp("empty.tsv", "a\t \t1\n");
  EXPECT_EQ(errorOf([&] { readSplit(empty.substr(0, empty.size() - 4), true); }),
            empty + ":1: empty hypothesis");
  EXPECT_NE(errorOf([&] { readSplit("/nonexistent/dev", true); })
                .find("no such split"),
            std::string::npos);
}

/// Trains on a slice of SNLI and checks dev accuracy well above chance
/// (33%); a model with a broken gradient stays near chance.
TEST(NliTraining, LearnsFromARealSlice) {
  const std::string snli = CELLC_SHARED_DATA "/nli/snli";
  if (!std::ifstream(snli + "/s1.train_small"))
    GTEST_SKIP() << snli << " is absent";
  std::vector<Pair> train = readSplit(snli + "/train_small", true);
  std::vector<Pair> dev = readSplit(snli + "/dev", true);
  train.resize(6000);
  dev.resize(1000);
  for (std::string kind : {"bow", "attention"}) {
    TrainOptions options;
    options.model.kind = kind;
    options.model.emb = 32;
    options.model.hidden = 32;
    options.epochs = 5;
    options.lr = 3e-3f;
    options.progress = false;
    options.out = ::testing::TempDir() + "nli-" + kind + ".ckpt";
    Session session(options, {train, dev});
    session.train({train, dev});
    EXPECT_GT(session.state.bestAccuracy, 0.45) << kind;
    // The checkpoint gives the same predictions.
    auto loaded = Session::load(options.out);
    EXPECT_EQ(loaded->predict(dev), session.predict(dev)) << kind;
  }
}

/// Pairs over a small vocabulary whose label follows from the words, so a
/// model learns something in a few updates.
std::vector<Pair> syntheticPairs(int count, uint64_t seed) {
  const std::vector<std::string> words = {"a", "dog", "cat", "runs", "sits",
                                          "not", "big", "small", "the"};
  Rng rng(seed);
  std::vector<Pair> pairs;
  for (int i = 0; i < count; ++i) {
    Pair pair;
    for (int k = 0; k < 3 + int(rng.next() % 4); ++k)
      pair.premise.push_back(words[rng.next() % words.size()]);
    pair.hypothesis = {pair.premise[0], words[rng.next() % words.size()]};
    pair.label = int32_t(rng.next() % 3);
    if (pair.hypothesis[1] == "not")
      pair.label = 2;
    pairs.push_back(pair);
  }
  return pairs;
}

/// A run stopped after its first epoch's checkpoint and resumed from it
/// ends exactly where the same run without a stop ends: parameters, Adam
/// moments (through the parameters they move), the dropout stream and the
/// per-epoch shuffles all come back from the checkpoint.
TEST(NliTraining, ResumedAfterAnEpochEndsExactlyAsWithoutAStop) {
  std::vector<Pair> train = syntheticPairs(90, 3), valid = syntheticPairs(30, 4);
  auto options = [](const std::string &name) {
    TrainOptions o;
    o.model.kind = "attention";
    o.model.emb = 8;
    o.model.hidden = 8;
    o.model.dropout = 0.2f;
    o.batch = 16;
    o.epochs = 3;
    o.lr = 3e-3f;
    o.progress = false;
    o.out = ::testing::TempDir() + "nli-resume-" + name + ".ckpt";
    return o;
  };
  TrainData data{train, valid};
  Session straight(options("straight"), data);
  straight.train(data);

  struct Killed {};
  TrainOptions stoppedOptions = options("stopped");
  {
    Session stopped(stoppedOptions, data);
    stopped.afterEpoch = [](int64_t epoch) {
      if (epoch == 1)
        throw Killed();
    };
    EXPECT_THROW(stopped.train(data), Killed);
  }
  std::unique_ptr<Session> resumed = Session::load(stoppedOptions.out);
  ASSERT_EQ(resumed->state.epoch, 1);
  resumed->train(data);
  EXPECT_EQ(resumed->state.epoch, 3);
  EXPECT_EQ(resumed->state.updates, straight.state.updates);
  EXPECT_EQ(resumed->state.bestAccuracy, straight.state.bestAccuracy);
  modeltest::expectSameParams(resumed->getModel().params().all(),
                              straight.getModel().params().all());

  // Killed in the middle of epoch 2, after the --save-every checkpoint of
  // update 10 and two updates more: resumed from update 10, the run ends as
  // the straight one (the position in the epoch, the loss so far and the
  // dropout stream are in the checkpoint).
  TrainOptions midOptions = options("mid");
  midOptions.saveEvery = 5;
  {
    Session stopped(midOptions, data);
    stopped.afterUpdate = [](int64_t update) {
      if (update == 12)
        throw Killed();
    };
    EXPECT_THROW(stopped.train(data), Killed);
  }
  std::unique_ptr<Session> mid = Session::load(midOptions.out);
  ASSERT_EQ(mid->state.updates, 10);
  ASSERT_EQ(mid->state.epoch, 1);
  ASSERT_EQ(mid->state.batchInEpoch, 4); // 6 batches of 16 pairs an epoch
  mid->train(data);
  EXPECT_EQ(mid->state.updates, straight.state.updates);
  EXPECT_EQ(mid->state.bestAccuracy, straight.state.bestAccuracy);
  modeltest::expectSameParams(mid->getModel().params().all(),
                              straight.getModel().params().all());
}

/// --patience N stops after N epochs without a better validation accuracy;
/// 0 never stops early.
TEST(NliTraining, PatienceStopsAfterEpochsWithoutProgress) {
  std::vector<Pair> train = syntheticPairs(48, 7);
  TrainOptions o;
  o.model.kind = "bow";
  o.model.emb = 4;
  o.model.hidden = 4;
  o.batch = 16;
  o.epochs = 30;
  // A learning rate this small leaves the accuracy where it starts.
  o.lr = 1e-7f;
  o.progress = false;
  o.patience = 2;
  o.out = ::testing::TempDir() + "nli-patience.ckpt";
  TrainData data{train, train};
  Session patient(o, data);
  patient.train(data);
  EXPECT_EQ(patient.state.epoch, 3); // the first epoch sets the best
  EXPECT_TRUE(patient.state.finished);
  o.patience = 0;
  o.epochs = 5;
  o.out = ::testing::TempDir() + "nli-no-patience.ckpt";
  Session endless(o, data);
  endless.train(data);
  EXPECT_EQ(endless.state.epoch, 5);
}

/// A run killed after epoch 2 without progress (one epoch of patience
/// spent) and resumed stops where the run without a kill stops: the count
/// of epochs without progress comes back with the checkpoint.
TEST(NliTraining, ResumedRunKeepsItsPatienceCount) {
  std::string dir = ::testing::TempDir() + "nli-patience-resume";
  std::system(("rm -rf " + dir + " && mkdir -p " + dir).c_str());
  {
    std::ofstream file(dir + "/train.tsv");
    for (const Pair &pair : syntheticPairs(48, 9)) {
      auto join = [](const std::vector<std::string> &words) {
        std::string text;
        for (const std::string &word : words)
          text += (text.empty() ? "" : " ") + word;
        return text;
      };
      file << join(pair.premise) << "\t" << join(pair.hypothesis) << "\t"
           << kLabelNames[pair.label] << "\n";
    }
  }
  TrainRequest request;
  TrainOptions &o = request.options;
  o.train = o.valid = dir + "/train";
  o.model.kind = "bow";
  o.model.emb = 4;
  o.model.hidden = 4;
  o.batch = 16;
  o.epochs = 30;
  o.lr = 1e-7f; // the accuracy stays where the first epoch puts it
  o.patience = 2;
  o.progress = false;
  o.out = dir + "/run.ckpt";
  struct Killed {};
  TrainData data;
  {
    std::unique_ptr<Session> first = prepareTraining(request, data);
    first->afterEpoch = [](int64_t epoch) {
      if (epoch == 2)
        throw Killed();
    };
    EXPECT_THROW(first->train(data), Killed);
  }
  request.resume = true;
  std::unique_ptr<Session> resumed = prepareTraining(request, data);
  ASSERT_TRUE(resumed);
  EXPECT_EQ(resumed->state.badEpochs, 1);
  resumed->train(data);
  EXPECT_EQ(resumed->state.epoch, 3); // as PatienceStops... without a kill
}

/// A model trained on a .cell file loads after the file is gone: the
/// checkpoint keeps the cell's source.
TEST(NliTraining, CheckpointKeepsTheCellFile) {
  std::vector<Pair> train = syntheticPairs(40, 5);
  std::string cellPath = ::testing::TempDir() + "nli-kept.cell";
  std::ofstream(cellPath) << "cell kept(x: [I]) {\n  state h: [H]\n"
                             "  param W: [H, I], U: [H, H]\n"
                             "  h' = tanh(W @ x + U @ h)\n}\n";
  TrainOptions o;
  o.model.cell = cellPath;
  o.model.emb = 6;
  o.model.hidden = 6;
  o.batch = 16;
  o.epochs = 1;
  o.progress = false;
  o.out = ::testing::TempDir() + "nli-cell-file.ckpt";
  TrainData data{train, train};
  Session session(o, data);
  session.train(data);
  std::remove(cellPath.c_str());
  std::unique_ptr<Session> loaded = Session::load(o.out);
  modeltest::expectSameParams(loaded->getModel().params().all(),
                              session.getModel().params().all());
  EXPECT_EQ(loaded->state.bestAccuracy, session.state.bestAccuracy);
}

} // namespace
