//===- ResumeTest.cpp - Checkpoints and exact resume of cws train ---------===//

#include "TestFiles.h"
#include "TinyCorpus.h"

#include "models/common/CheckpointFile.h"
#include "test/models/ParamChecks.h"

using namespace cws;
using namespace cws::test;

namespace {

struct Interrupted : std::exception {};

std::unique_ptr<Session> start(const TrainRequest &request, TrainData &data) {
  auto session = prepareTraining(request, data);
  EXPECT_TRUE(session);
  return session;
}

/// Everything a resumed run must reproduce (not the run id or the clock).
void expectSameRun(Session &a, Session &b) {
  modeltest::expectSameParams(a.model->params(), b.model->params());
  EXPECT_EQ(a.adam.step, b.adam.step);
  EXPECT_EQ(a.state.updates, b.state.updates);
  EXPECT_EQ(a.state.epochLoss, b.state.epochLoss);
  EXPECT_EQ(a.state.validF1, b.state.validF1);
  EXPECT_EQ(std::vector<uint64_t>(a.state.dropoutRng.s,
                                  a.state.dropoutRng.s + 4),
            std::vector<uint64_t>(b.state.dropoutRng.s,
                                  b.state.dropoutRng.s + 4));
}

TEST(CwsResume, KilledMidEpochContinuesExactly) {
  std::string corpus = writeFile("resume.utf8", tinyCorpus(60, 1));
  TrainRequest straight{tinyOptions("straight", corpus), {}, false, false};
  TrainData data;
  auto a = start(straight, data);
  a->train(data);

  // The same run, killed at update 17 with the last save at update 15.
  TrainRequest killed{tinyOptions("killed", corpus), {}, false, false};
  killed.options.saveEvery = 5;
  auto b = start(killed, data);
  b->onUpdate = [](int64_t update, double) {
    if (update == 17)
      throw Interrupted();
  };
  EXPECT_THROW(b->train(data), Interrupted);
  TrainRequest resumed = killed;
  resumed.resume = true;
  auto c = start(resumed, data);
  EXPECT_EQ(c->state.updates, 15);
  EXPECT_EQ(c->runId, b->runId);
  c->train(data);
  expectSameRun(*a, *c);
  // A finished run has nothing left to do.
  EXPECT_FALSE(prepareTraining(resumed, data));
}

TEST(CwsResume, RefusesOtherSettingsAndOtherRuns) {
  std::string corpus = writeFile("refuse.utf8", tinyCorpus(30, 2));
  TrainRequest first{tinyOptions("refuse", corpus), {}, false, false};
  first.options.epochs = 1;
  TrainData data;
  start(first, data)->train(data);

  TrainRequest wider = first;
  wider.resume = true;
  wider.options.hidden = 16;
  wider.given = {"hidden"};
  std::string error = errorOf([&] { prepareTraining(wider, data); });
  EXPECT_NE(error.find("--hidden: the checkpoint has '8', the command line "
                       "'16'"),
            std::string::npos)
      << error;
  // More epochs are a change a resumed run may make.
  TrainRequest longer = first;
  longer.resume = true;
  longer.options.epochs = 2;
  longer.given = {"epochs"};
  auto session = start(longer, data);
  EXPECT_EQ(session->state.epoch, 1);
  // A new run must not overwrite the first run's checkpoint.
  error = errorOf([&] { prepareTraining(first, data); });
  EXPECT_NE(error.find("holds the checkpoint of another run"),
            std::string::npos)
      << error;
  TrainRequest forced = first;
  forced.force = true;
  EXPECT_TRUE(prepareTraining(forced, data));
}

TEST(CwsResume, CheckpointsRoundTripAndAreTagged) {
  std::string corpus = writeFile("roundtrip.utf8", tinyCorpus(30, 3));
  TrainRequest request{tinyOptions("roundtrip", corpus), {}, false, false};
  request.options.epochs = 1;
  TrainData data;
  auto session = start(request, data);
  session->train(data);
  auto loaded = Session::load(request.options.out);
  EXPECT_EQ(loaded->serialize(), session->serialize());
  EXPECT_EQ(loaded->segment(data.valid), session->segment(data.valid));
  // Another driver's checkpoint in the same container is named as such.
  std::string other = testing::TempDir() + "cws-other.ckpt";
  models::writeCheckpointFile(other, std::string(8, '\1') + "nmt payload");
  EXPECT_NE(errorOf([&] { Session::load(other); }).find("not a cws checkpoint"),
            std::string::npos);
  std::string text = writeFile("text.ckpt", "hello\n");
  EXPECT_NE(errorOf([&] { Session::load(text); })
                .find(text + ": not a cws checkpoint"),
            std::string::npos);
}

TEST(CwsResume, WordListTravelsInTheCheckpoint) {
  std::string corpus = writeFile("dict.utf8", tinyCorpus(30, 5));
  TrainRequest request{tinyOptions("dict", corpus), {}, false, false};
  request.options.epochs = 1;
  request.options.dict = writeFile("dict-words.utf8", "中国\n人民\n新世纪\n");
  TrainData data;
  auto session = start(request, data);
  session->train(data);
  std::remove(request.options.dict.c_str());
  auto loaded = Session::load(request.options.out);
  EXPECT_EQ(loaded->lexicon.words(), session->lexicon.words());
  EXPECT_EQ(loaded->segment(data.valid), session->segment(data.valid));
}

// Like the word list, a `--cell my.cell` travels in the checkpoint: the
// model loads after the file is removed, with the cell it was trained with.
TEST(CwsResume, CellFileTravelsInTheCheckpoint) {
  std::string corpus = writeFile("cellfile.utf8", tinyCorpus(30, 6));
  TrainRequest request{tinyOptions("cellfile", corpus), {}, false, false};
  request.options.epochs = 1;
  request.options.cell = writeFile(
      "kept.cell", "cell kept(x: [I]) {\n  state h: [H]\n"
                   "  param W: [H, I], U: [H, H]\n"
                   "  h' = tanh(W @ x + U @ h)\n}\n");
  TrainData data;
  auto session = start(request, data);
  session->train(data);
  std::remove(request.options.cell.c_str());
  auto loaded = Session::load(request.options.out);
  EXPECT_EQ(loaded->segment(data.valid), session->segment(data.valid));
  EXPECT_EQ(loaded->serialize(), session->serialize());
}

TEST(CwsResume, ValidationDefaultsToTheEndOfTheTrainingFile) {
  std::string corpus = writeFile("split.utf8", tinyCorpus(50, 4));
  TrainOptions options = tinyOptions("split", corpus);
  TrainData data = loadTrainData(options);
  EXPECT_EQ(data.train.size(), 45u);
  EXPECT_EQ(data.valid.size(), 5u);
  EXPECT_EQ(data.valid.back().chars, readGold(corpus).back().chars);
  options.validFraction = 0;
  EXPECT_NE(errorOf([&] { loadTrainData(options); }).find("too few"),
            std::string::npos);
}

} // namespace

namespace {

/// --patience N stops after N epochs without a better validation F1, and a
/// resume of the stopped run says it has finished unless given more.
TEST(CwsResume, PatienceStopsAndStaysStopped) {
  std::string corpus = writeFile("patience.utf8", tinyCorpus(60, 3));
  TrainRequest request{tinyOptions("patience", corpus), {}, false, false};
  // A learning rate this small leaves the F1 where the first epoch puts it.
  request.options.lr = 1e-9f;
  request.options.epochs = 20;
  request.options.patience = 2;
  TrainData data;
  auto session = start(request, data);
  session->train(data);
  EXPECT_EQ(session->state.epoch, 3);
  EXPECT_EQ(session->state.validF1.size(), 3u);
  TrainRequest again = request;
  again.resume = true;
  EXPECT_FALSE(prepareTraining(again, data));
  again.given = {"patience"};
  again.options.patience = 3;
  auto more = start(again, data);
  ASSERT_TRUE(more);
  more->train(data);
  EXPECT_EQ(more->state.epoch, 4);
}

} // namespace
