//===- ResumeTest.cpp - Resume writes only where asked; kill -9 is safe ---===//

#include "models/nmt/Resume.h"

#include "test/models/ParamChecks.h"
#include "test/models/TinyRun.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace nmt;

namespace {

[[maybe_unused]] const bool singleThreaded = setThreads(1);

TrainOptions tiny(const std::string &name) {
  return test::tinyRun("resume-" + name, "gru");
}

using test::bytesOf;

bool exists(const std::string &path) { return access(path.c_str(), F_OK) == 0; }

/// Trains `updates` updates of a new run to o.out.
void trainNew(TrainOptions o, int64_t updates) {
  o.maxUpdates = updates;
  TrainRequest request{o, {}, false, false, ""};
  TrainData data;
  prepareTraining(request, data)->train(data);
}

std::unique_ptr<Session> resume(TrainOptions o, std::set<std::string> given,
                                std::string from = "") {
  TrainRequest request{o, std::move(given), true, false, std::move(from)};
  TrainData data;
  auto session = prepareTraining(request, data);
  session->train(data);
  return session;
}

} // namespace

// Resuming a copy of a checkpoint used to write to the path stored in it,
// overwriting the original run's file.
TEST(Resume, WritesToOutNeverToTheCheckpointsStoredPath) {
  TrainOptions a = tiny("original");
  trainNew(a, 3);
  std::string original = bytesOf(a.out);
  TrainOptions b = a;
  b.out = tiny("copy").out;
  std::ofstream(b.out, std::ios::binary) << original;
  b.maxUpdates = 6;
  auto session = resume(b, {"max-updates"});
  EXPECT_EQ(session->state.updates, 6);
  EXPECT_EQ(bytesOf(a.out), original) << "the original run's file changed";
  EXPECT_EQ(Session::load(b.out)->state.updates, 6);
}

// A new run (another run id) must not overwrite an existing checkpoint.
TEST(Resume, RefusesToOverwriteAnotherRunsCheckpoint) {
  TrainOptions o = tiny("owned");
  trainNew(o, 2);
  std::string before = bytesOf(o.out);
  TrainRequest again{o, {}, false, false, ""};
  TrainData data;
  try {
    prepareTraining(again, data);
    FAIL() << "a new run overwrote another run's checkpoint";
  } catch (const DataError &error) {
    EXPECT_NE(std::string(error.what()).find("another run"), std::string::npos)
        << error.what();
  }
  EXPECT_EQ(bytesOf(o.out), before);
  again.force = true;
  EXPECT_NO_THROW(prepareTraining(again, data));
}

TEST(Resume, ContradictingArchitectureIsAnErrorListingIt) {
  TrainOptions o = tiny("arch");
  trainNew(o, 2);
  TrainOptions other = o;
  other.model.cell = "atr";
  other.model.hidden = 64;
  try {
    resume(other, {"cell", "hidden", "epochs"});
    FAIL() << "resumed a gru checkpoint as --cell atr --hidden 64";
  } catch (const DataError &error) {
    std::string text = error.what();
    EXPECT_NE(text.find("--cell: the checkpoint has 'gru'"), std::string::npos)
        << text;
    EXPECT_NE(text.find("--hidden: the checkpoint has '12'"), std::string::npos)
        << text;
  }
}

// A kill during the first save leaves only OUT.best and a partial OUT.tmp.
TEST(Resume, MissingOutResumesFromBestAndRemovesTheTemporary) {
  TrainOptions o = tiny("best");
  o.maxUpdates = 0;
  o.epochs = 1;
  trainNew(o, 0);
  ASSERT_TRUE(exists(o.out + ".best"));
  std::rename(o.out.c_str(), (o.out + ".tmp").c_str());
  TrainOptions more = o;
  more.epochs = 2;
  auto session = resume(more, {"epochs"});
  EXPECT_EQ(session->state.epoch, 2) << "started from scratch";
  EXPECT_FALSE(exists(o.out + ".tmp"));
}

// The epoch loss of a resumed epoch covers the batches before the resume.
TEST(Resume, MidEpochResumeLogsTheWholeEpochLoss) {
  TrainOptions o = tiny("epoch-loss");
  o.epochs = 1;
  TrainData data = loadTrainData(o);
  Session straight(o, data);
  straight.train(data);
  TrainOptions p = tiny("epoch-loss-b");
  p.epochs = 1;
  trainNew(p, 3);
  auto resumed = resume(p, {"max-updates"}); // p.maxUpdates: 0, no limit
  ASSERT_EQ(resumed->state.epochLoss.size(), 1u);
  EXPECT_EQ(resumed->state.epochLoss[0], straight.state.epochLoss[0]);
}

// kill -9 at random moments (during updates, saves, validation), each time
// resuming with the same command: the end result is bit-identical to an
// uninterrupted run, and so is the epoch loss of the interrupted epochs.
TEST(Resume, KillNineAnywhereThenResumeIsBitIdentical) {
  TrainOptions o = tiny("kill");
  std::string reference = testing::TempDir() + "resume-kill-ref.ckpt";
  for (const std::string &suffix : {"", ".best", ".log"})
    std::remove((reference + suffix).c_str());
  auto command = [](const std::string &out) {
    return std::vector<std::string>{NMT_BINARY,
                                    "train",
                                    "--threads",
                                    "1",
                                    "--no-progress",
                                    "--task-train",
                                    "150",
                                    "--task-valid",
                                    "10",
                                    "--cell",
                                    "gru",
                                    "--emb",
                                    "8",
                                    "--hidden",
                                    "12",
                                    "--att",
                                    "8",
                                    "--readout",
                                    "8",
                                    "--max-tokens",
                                    "300",
                                    "--lr",
                                    "5e-3",
                                    "--patience",
                                    "0",
                                    "--epochs",
                                    "100",
                                    "--max-updates",
                                    "120",
                                    "--save-every",
                                    "1",
                                    "--resume",
                                    "--out",
                                    out};
  };
  auto run = [](std::vector<std::string> args, int killAfterMs) {
    pid_t pid = fork();
    if (pid == 0) {
      std::vector<char *> argv;
      for (auto &arg : args)
        argv.push_back(arg.data());
      argv.push_back(nullptr);
      freopen("/dev/null", "w", stderr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (killAfterMs >= 0) {
      usleep(useconds_t(killAfterMs) * 1000);
      kill(pid, SIGKILL);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
  };
  ASSERT_EQ(run(command(reference), -1), 0);
  std::mt19937 random(12);
  int killed = 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    int status = run(command(o.out), int(random() % 400));
    killed += WIFSIGNALED(status);
  }
  EXPECT_GT(killed, 0) << "no run was killed; the test proves nothing";
  std::printf("%d of 8 runs killed\n", killed);
  ASSERT_EQ(run(command(o.out), -1), 0);
  // Resuming a run that reached --max-updates must change nothing (it used
  // to train one more update).
  ASSERT_EQ(run(command(o.out), -1), 0);
  auto straight = Session::load(reference), resumed = Session::load(o.out);
  EXPECT_EQ(resumed->state.updates, 120);
  EXPECT_EQ(resumed->state.epochLoss, straight->state.epochLoss);
  modeltest::expectSameParams(straight->model->params(),
                                  resumed->model->params());
}

// A finished run stays as it ended when it is resumed with the options it
// ended under, --epochs included: running a recipe again (multi30k.sh
// passes --epochs every time) once trained a stopped run one epoch more. A
// larger --epochs goes on; after an early stop, a larger --patience does.
TEST(Resume, FinishedRunGoesOnOnlyWhereTheNewOptionsAllowIt) {
  auto start = [](TrainOptions o, std::set<std::string> given, bool resume) {
    TrainData data;
    return prepareTraining({o, std::move(given), resume, false, ""}, data);
  };
  TrainOptions o = tiny("finished");
  o.maxUpdates = 0;
  o.epochs = 2;
  start(o, {}, false)->train(loadTrainData(o));
  std::string ended = bytesOf(o.out);
  EXPECT_EQ(start(o, {"epochs"}, true), nullptr);
  EXPECT_EQ(bytesOf(o.out), ended);
  TrainOptions more = o;
  more.epochs = 3;
  auto longer = start(more, {"epochs"}, true);
  ASSERT_NE(longer, nullptr);
  EXPECT_EQ(longer->state.epoch, 2);

  // lr 1e-30 (below every weight's last bit): the second epoch makes no
  // progress, and patience 1 stops the run
  // there, 3 epochs short of --epochs.
  TrainOptions flat = tiny("stopped");
  flat.maxUpdates = 0;
  flat.epochs = 5;
  flat.patience = 1;
  flat.lr = 1e-30f;
  auto first = start(flat, {}, false);
  first->train(loadTrainData(flat));
  ASSERT_EQ(first->state.epoch, 2);
  EXPECT_EQ(start(flat, {"epochs", "patience"}, true), nullptr);
  TrainOptions patient = flat;
  patient.patience = 2;
  auto goesOn = start(patient, {"patience"}, true);
  ASSERT_NE(goesOn, nullptr);
  EXPECT_EQ(goesOn->state.epoch, 2);
}
