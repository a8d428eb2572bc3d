//===- RunLogTest.cpp - A run's event log across kills ---------------------===//

#include "models/common/Data.h"
#include "models/common/OptionMap.h"
#include "models/common/RunFiles.h"
#include "models/common/RunLog.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
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

// Each process starts its events with its options, as JSON: numbers as
// numbers, other text as strings.
TEST(RunLog, ConfigEventComesFirst) {
  std::string stem = ::testing::TempDir() + "runlog-config";
  std::remove((stem + ".log").c_str());
  std::remove((stem + ".jsonl").c_str());
  {
    RunLog log("test", stem + ".log", stem + ".jsonl");
    log.configEvent(0, {{"cell", "gru"}, {"lr", "0.001"}, {"out", "a\"b"}});
    log.event("epoch", {{"epoch", 1}, {"update", 5}});
  }
  std::ifstream in(stem + ".jsonl");
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  EXPECT_EQ(first.rfind("{\"time\": \"", 0), 0u) << first;
  EXPECT_NE(first.find("\"event\": \"config\", \"update\": 0, \"options\": "
                       "{\"cell\": \"gru\", \"lr\": 0.001, \"out\": "
                       "\"a\\\"b\"}}"),
            std::string::npos)
      << first;
  EXPECT_NE(second.find("\"event\": \"epoch\""), std::string::npos);
}

// A process resumed at update 5 logged its options and updates 6-10, and
// was killed before its next save: its options go with its events; those
// of the process that made the checkpoint stay.
TEST(RunLog, DropsTheOptionsOfAProcessWhoseEventsAreDropped) {
  std::string path = ::testing::TempDir() + "runlog-drop-config.jsonl";
  auto config = [](int update) {
    return "{\"time\": \"2026-11-28T08:00:00\", \"seconds\": 0.1, "
           "\"event\": \"config\", \"update\": " +
           std::to_string(update) + ", \"options\": {\"max-updates\": 9}}\n";
  };
  std::string kept = config(0) + event("update", 1, 2) + event("epoch", 1, 5);
  std::string after = config(5) + event("update", 2, 6) + event("epoch", 2, 10);
  std::ofstream(path) << kept + after;
  dropEventsAfter("test", path, 1, 5);
  EXPECT_EQ(contents(path), kept);
  // Options logged before the checkpoint's update stay.
  std::ofstream(path) << kept + config(3);
  dropEventsAfter("test", path, 1, 5);
  EXPECT_EQ(contents(path), kept + config(3));
}

// --resume compares data files by what they name, not how they are spelt.
TEST(RunFiles, SameFileSpeltTwoWaysIsTheSameSetup) {
  std::set<std::string> given = {"train-src"}, paths = {"train-src"};
  OptionMap stored = {{"train-src", "data/train.en"}};
  OptionMap respelt = {{"train-src", "other/../data/./train.en"}};
  EXPECT_NO_THROW(checkSameSetup("x.ckpt", stored, respelt, given, {}, paths));
  EXPECT_TRUE(samePath("data/train.en", "other/../data/./train.en"));
  // Options that are no paths still compare as text.
  EXPECT_THROW(checkSameSetup("x.ckpt", stored, respelt, given, {}, {}),
               DataError);
  OptionMap other = {{"train-src", "data/train.de"}};
  EXPECT_THROW(checkSameSetup("x.ckpt", stored, other, given, {}, paths),
               DataError);
}
