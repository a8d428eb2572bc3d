//===- DataParallelTest.cpp - mpirun -np 2 nmt train equals one process ---===//
//
// Two ranks, each on its half of every batch with the gradients summed,
// must take the steps one process takes on the whole batch: the same
// parameters to float tolerance (the halves' sums round differently) and
// the same validation BLEU; a run resumes with another number of ranks;
// rank 0 alone writes the run's files. Real processes through mpirun;
// skipped where Open MPI's launcher is not installed.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/Trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

using namespace nmt;

namespace {

bool haveMpirun() { return std::system("command -v mpirun >/dev/null") == 0; }

/// A few seconds of training on the embedded task, without dropout (whose
/// masks could not match across layouts).
std::string trainCommand(const std::string &out, const std::string &extra) {
  return std::string(NMT_BINARY) +
         " train --task numbers --task-train 10000 --task-valid 200"
         " --emb 64 --hidden 64 --att 64 --readout 64 --dropout 0"
         " --lr 3e-3 --threads 1 --no-progress --out " +
         out + " " + extra;
}

/// Runs `command` under `mpirun -np ranks` (ranks 0: as a plain process).
void run(int ranks, const std::string &command) {
  // Containers run tests as root, which Open MPI refuses unless told, and
  // may have no ssh, which mpirun looks for even to start local ranks.
  setenv("OMPI_MCA_plm_rsh_agent", "false", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  std::string line =
      ranks > 0 ? "mpirun --oversubscribe -np " + std::to_string(ranks) + " " +
                      command
                : command;
  ASSERT_EQ(std::system((line + " 2>/dev/null").c_str()), 0) << line;
}

/// The largest difference between two checkpoints' parameters, relative to
/// the largest parameter.
double largestDifference(const std::string &a, const std::string &b) {
  auto first = Session::load(a), second = Session::load(b);
  auto pa = first->model->params(), pb = second->model->params();
  EXPECT_EQ(pa.size(), pb.size());
  double difference = 0, largest = 0;
  for (size_t i = 0; i < pa.size() && i < pb.size(); ++i)
    for (size_t j = 0; j < pa[i]->value.size(); ++j) {
      difference = std::max<double>(
          difference, std::fabs(pa[i]->value[j] - pb[i]->value[j]));
      largest = std::max<double>(largest, std::fabs(pa[i]->value[j]));
    }
  return difference / largest;
}

int64_t linesOf(const std::string &path) {
  std::ifstream in(path);
  int64_t count = 0;
  for (std::string line; std::getline(in, line);)
    ++count;
  return count;
}

/// TempDir()/data-parallel-NAME.ckpt, with no files of an earlier run.
std::string temp(const std::string &name) {
  std::string out = testing::TempDir() + "data-parallel-" + name + ".ckpt";
  for (const std::string &suffix : {"", ".best", ".log", ".jsonl"})
    std::remove((out + suffix).c_str());
  return out;
}

} // namespace

TEST(DataParallel, TwoRanksTakeTheStepsOfOneProcess) {
  if (!haveMpirun())
    GTEST_SKIP() << "mpirun not installed (scripts/setup.sh installs it)";
  std::string one = temp("one"), two = temp("two");
  run(0, trainCommand(one, "--max-updates 40"));
  run(2, trainCommand(two, "--max-updates 40"));
  double difference = largestDifference(one, two);
  std::printf("largest parameter difference after 40 updates: %.2g\n",
              difference);
  // Measured 6e-5: Adam's normalised steps turn the rounding of gradients
  // near zero into whole steps. A shard's gradient left unweighted (the
  // mean over its own tokens) gives 0.16.
  EXPECT_LT(difference, 5e-4);
  // Rank 0 alone logs: the same lines as one process's run, and the time
  // it spent reducing gradients.
  EXPECT_EQ(linesOf(two + ".log"), linesOf(one + ".log") + 1);
  EXPECT_EQ(linesOf(two + ".jsonl"), linesOf(one + ".jsonl"));
}

TEST(DataParallel, SameValidationBleuAsOneProcess) {
  if (!haveMpirun())
    GTEST_SKIP() << "mpirun not installed";
  std::string one = temp("bleu-one"), two = temp("bleu-two");
  run(0, trainCommand(one, "--epochs 3"));
  run(2, trainCommand(two, "--epochs 3"));
  auto first = Session::load(one), second = Session::load(two);
  ASSERT_EQ(first->state.validBleu.size(), 3u);
  ASSERT_EQ(second->state.validBleu.size(), 3u);
  for (size_t epoch = 0; epoch < 3; ++epoch) {
    EXPECT_NEAR(first->state.validBleu[epoch], second->state.validBleu[epoch],
                0.01);
    EXPECT_NEAR(first->state.validPerplexity[epoch],
                second->state.validPerplexity[epoch], 1e-2);
  }
}

TEST(DataParallel, ResumesWithAnotherNumberOfRanks) {
  if (!haveMpirun())
    GTEST_SKIP() << "mpirun not installed";
  std::string straight = temp("straight"), split = temp("split");
  run(0, trainCommand(straight, "--max-updates 40"));
  // 2 ranks, then 1 process, then 3 ranks: each resumes the last.
  run(2, trainCommand(split, "--max-updates 15"));
  run(0, trainCommand(split, "--max-updates 30 --resume"));
  run(3, trainCommand(split, "--max-updates 40 --resume"));
  EXPECT_EQ(Session::load(split)->state.updates, 40);
  EXPECT_LT(largestDifference(straight, split), 5e-4);
}
