//===- RunLogTest.cpp - A run's event log across kills ---------------------===//

#include "models/common/Data.h"
#include "models/common/OptionMap.h"
#include "models/common/RunFiles.h"
#include "models/common/RunLog.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
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

/// Every line of the JSON-lines file at `path`, parsed.
std::vector<nlohmann::json> events(const std::string &path) {
  std::vector<nlohmann::json> parsed;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    parsed.push_back(nlohmann::json::parse(line));
  return parsed;
}

} // namespace

// Each process starts its events with its options, as JSON: numbers as
// numbers, other text as strings; then the machine and the versions.
TEST(RunLog, ConfigEventComesFirst) {
  std::string stem = ::testing::TempDir() + "runlog-config";
  std::remove((stem + ".log").c_str());
  std::remove((stem + ".jsonl").c_str());
  {
    RunLog log("test", stem + ".log", stem + ".jsonl");
    log.configEvent(0, {{"cell", "gru"}, {"lr", "0.001"}, {"hidden", "8"}});
    log.event("epoch", {{"epoch", 1}, {"update", 5}, {"loss", 2.5}});
  }
  std::vector<nlohmann::json> written = events(stem + ".jsonl");
  ASSERT_EQ(written.size(), 2u);
  const nlohmann::json &config = written[0];
  EXPECT_EQ(config["event"], "config");
  EXPECT_EQ(config["update"], 0);
  EXPECT_EQ(config["options"],
            nlohmann::json({{"cell", "gru"}, {"lr", 0.001}, {"hidden", 8}}));
  EXPECT_TRUE(config["options"]["hidden"].is_number_integer());
  for (const char *key : {"host", "cpu", "cores", "threads", "kernel_threads"})
    EXPECT_TRUE(config["machine"].contains(key)) << key;
  EXPECT_GE(config["machine"]["cores"].get<int>(), 1);
  EXPECT_EQ(config["versions"]["cellc"], CELLC_VERSION);
  EXPECT_FALSE(config["versions"]["compiler"].get<std::string>().empty());
  EXPECT_FALSE(config["versions"]["onednn"].get<std::string>().empty());
  // Counts given as integers stay integers.
  EXPECT_EQ(written[1]["event"], "epoch");
  EXPECT_TRUE(written[1]["epoch"].is_number_integer());
  EXPECT_EQ(written[1]["loss"], 2.5);
  EXPECT_TRUE(written[1]["seconds"].is_number_float());
  // The time comes first: checkLogTarget knows an event log by it.
  EXPECT_EQ(contents(stem + ".jsonl").rfind("{\"time\":\"", 0), 0u);
}

// Text in an option comes back as it was: quotes, backslashes, control
// characters, letters beyond ASCII; a value that only looks like a number
// stays a string.
TEST(RunLog, OptionTextRoundTrips) {
  std::string stem = ::testing::TempDir() + "runlog-text";
  std::remove((stem + ".log").c_str());
  std::remove((stem + ".jsonl").c_str());
  std::map<std::string, std::string> options = {
      {"out", "it's \"odd\" \\ and\nnew\tna\xc3\xafve \xe4\xb8\xad\x01.ckpt"},
      {"seed", "007"},
      {"lr", "1e-3"},
      {"k\"ey", "nan"}};
  {
    RunLog log("test", stem + ".log", stem + ".jsonl");
    log.configEvent(3, options);
    log.event("validation",
              {{"valid_ppl", std::nan("")}, {"valid_bleu", INFINITY}});
  }
  std::string text = contents(stem + ".jsonl");
  // One event a line: the newline in --out is escaped.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  std::vector<nlohmann::json> written = events(stem + ".jsonl");
  ASSERT_EQ(written.size(), 2u);
  const nlohmann::json &read = written[0]["options"];
  EXPECT_EQ(read["out"], options["out"]);
  EXPECT_EQ(read["seed"], "007");
  EXPECT_EQ(read["lr"], 1e-3);
  EXPECT_EQ(read["k\"ey"], "nan");
  EXPECT_EQ(written[0]["update"], 3);
  EXPECT_TRUE(written[1]["valid_ppl"].is_null());
  EXPECT_TRUE(written[1]["valid_bleu"].is_null());
}

// The text log: each line after the local time and its UTC offset, the
// line as it was written (braces are text, not a format).
TEST(RunLog, TextLinesStartWithTheTimeAndZone) {
  std::string stem = ::testing::TempDir() + "runlog-lines";
  std::remove((stem + ".log").c_str());
  std::remove((stem + ".jsonl").c_str());
  {
    RunLog log("test", stem + ".log", stem + ".jsonl");
    log.text() << "epoch 1 update 4 loss {} 100%" << std::endl;
    log.text() << "no newline at the end";
  }
  std::ifstream in(stem + ".log");
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  std::regex stamp("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
                   "[+-][0-9]{2}:[0-9]{2} ");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(first, match, stamp,
                                std::regex_constants::match_continuous))
      << first;
  EXPECT_EQ(first.substr(match.length()), "epoch 1 update 4 loss {} 100%");
  EXPECT_TRUE(std::regex_search(second, match, stamp,
                                std::regex_constants::match_continuous));
  EXPECT_EQ(second.substr(match.length()), "no newline at the end");
  EXPECT_TRUE(std::regex_match(
      localTimestamp(), std::regex("[0-9T:-]{19}[+-][0-9]{2}:[0-9]{2}")));
  // A log written so is a log: a later run may append to it.
  EXPECT_NO_THROW(checkLogTarget(stem + ".log", {}, false));
  EXPECT_NO_THROW(checkLogTarget(stem + ".jsonl", {}, true));
}

// Events in the compact form dropped as those of older logs are, and a
// line cut short by a kill goes with them.
TEST(RunLog, DropsCompactEventsAndACutLine) {
  std::string path = ::testing::TempDir() + "runlog-drop-compact.jsonl";
  auto compact = [](const std::string &name, int epoch, int update) {
    return nlohmann::ordered_json({{"time", "2026-11-28T08:00:00+00:00"},
                                   {"seconds", 1.5},
                                   {"event", name},
                                   {"epoch", epoch},
                                   {"update", update}})
               .dump() +
           "\n";
  };
  std::string kept = compact("update", 1, 2) + compact("epoch", 1, 5);
  std::ofstream(path) << kept + compact("update", 2, 6) +
                             "{\"time\":\"2026-11-28T08:00:01+00:00\",\"sec";
  dropEventsAfter("test", path, 1, 5);
  EXPECT_EQ(contents(path), kept);
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
