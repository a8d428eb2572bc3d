//===- RunLogTest.cpp - A run's event log across kills ---------------------===//

#include "models/common/Data.h"
#include "models/common/RunLog.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace models;

namespace {

std::string event(const std::string &name, int epoch, int update) {
  return "{\"time\": \"2026-11-28T08:00:00\", \"seconds\": 1.5, \"event\": \"" +
         name + "\", \"epoch\": " + std::to_string(epoch) +
         ", \"update\": " + std::to_string(update) + ", \"loss\": 2.5}\n";
}

std::string contents(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A run killed after epoch 2's validation but before its save resumes from
// the checkpoint of epoch 1 (update 5) and logs updates 6-10 and epoch 2
// again: the killed run's copies go first.
TEST(RunLog, DropsEventsAfterTheCheckpoint) {
  std::string path = ::testing::TempDir() + "runlog-drop.jsonl";
  std::string kept = event("update", 1, 2) + event("update", 1, 4) +
                     event("validation", 1, 5) + event("epoch", 1, 5);
  std::string after = event("update", 2, 6) + event("validation", 2, 8) +
                      event("update", 2, 10) + event("epoch", 2, 10);
  std::ofstream(path) << kept + after;
  dropEventsAfter("test", path, 1, 5);
  EXPECT_EQ(contents(path), kept);
  // Nothing after the checkpoint: nothing changes.
  dropEventsAfter("test", path, 1, 5);
  EXPECT_EQ(contents(path), kept);
  // A checkpoint saved at the epoch's last update, before the epoch's end:
  // the epoch's event came after it, its update events before.
  std::string lastUpdate = event("update", 1, 2) + event("update", 1, 4);
  std::ofstream(path) << lastUpdate + event("epoch", 1, 4);
  dropEventsAfter("test", path, 0, 4);
  EXPECT_EQ(contents(path), lastUpdate);
  // A missing log is a new one.
  dropEventsAfter("test", path + ".missing", 1, 5);
}

// Only a log is ever shortened.
TEST(RunLog, NeverShortensAFileThatIsNoLog) {
  std::string path = ::testing::TempDir() + "runlog-data.txt";
  std::ofstream(path) << "the training data\n" << event("epoch", 9, 99);
  EXPECT_THROW(dropEventsAfter("test", path, 1, 5), DataError);
  EXPECT_EQ(contents(path),
            "the training data\n" + event("epoch", 9, 99));
}

} // namespace
