//===- test/models/OptionTableTest.cpp - The drivers' option tables -------===//
//
// Each driver's train options are one table (models/common/OptionTable.h):
// the command line, the checkpoint's record and --resume's rules all come
// from it, so these tests walk all three drivers' tables.
//
//===----------------------------------------------------------------------===//

#include "models/common/OptionTable.h"
#include "models/common/Driver.h"
#include "models/cws/Options.h"
#include "models/nli/Options.h"
#include "models/nmt/Options.h"

#include "cellrt/Runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

namespace {

using models::DataError;
using models::Opt;
using models::OptionMap;

/// The names of a table's rows, and whether one repeats.
template <class Options> std::vector<std::string> rowNames() {
  std::vector<std::string> names;
  Options defaults;
  Options::fields(defaults, [&](const Opt &row, const auto &) {
    names.push_back(row.name());
  });
  return names;
}

template <class Options> void expectCommandLineCoversTheTable() {
  std::vector<std::string> names = rowNames<Options>();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(),
            names.size())
      << "a row name repeats";
  Options options;
  CLI::App cmd("test");
  models::addOptionTable(cmd, options);
  Options::fields(options, [&](const Opt &row, const auto &) {
    const CLI::Option *opt =
        cmd.get_option_no_throw("--" + row.commandLineName());
    EXPECT_EQ(opt != nullptr, row.form() != Opt::Form::Recorded) << row.name();
  });
}

TEST(OptionTable, EveryRowButRecordedOnesIsAnOption) {
  expectCommandLineCoversTheTable<nmt::TrainOptions>();
  expectCommandLineCoversTheTable<cws::TrainOptions>();
  expectCommandLineCoversTheTable<nli::TrainOptions>();
}

/// Every value comes back from the checkpoint's text exactly.
TEST(OptionTable, RecordRoundTrips) {
  nmt::TrainOptions n;
  n.model.cell = "gru";
  n.model.noLayerNorm = true;
  n.lr = 3.14159e-4f;
  n.seed = 18446744073709551557ull; // more bits than a double holds
  n.progress = false;
  n.plateauMetric = "either";
  EXPECT_EQ(nmt::TrainOptions::fromMap(n.toMap()).toMap(), n.toMap());
  EXPECT_EQ(nmt::TrainOptions::fromMap(n.toMap()).seed, n.seed);
  cws::TrainOptions c;
  c.dictDropout = 0.25f;
  c.betweenLayers = "raw";
  EXPECT_EQ(cws::TrainOptions::fromMap(c.toMap()).toMap(), c.toMap());
  nli::TrainOptions l;
  l.freezeEmbeddings = true;
  l.patience = 7;
  l.model.kind = "bow";
  EXPECT_EQ(nli::TrainOptions::fromMap(l.toMap()).toMap(), l.toMap());
}

/// A checkpoint from before an option took what the model was trained
/// with then, which is not today's default.
TEST(OptionTable, AbsentOptionsMeanWhatOldCheckpointsTrainedWith) {
  OptionMap map = nmt::TrainOptions().toMap();
  for (const char *key : {"between-layers", "deep-first", "plateau-metric"})
    map.erase(key);
  nmt::TrainOptions old = nmt::TrainOptions::fromMap(map);
  EXPECT_EQ(old.model.betweenLayers, "raw");
  EXPECT_EQ(old.model.deepFirst, "backward");
  EXPECT_EQ(old.plateauMetric, "bleu");
  EXPECT_EQ(nmt::TrainOptions().model.betweenLayers, "tanh");
  OptionMap cwsMap = cws::TrainOptions().toMap();
  cwsMap.erase("between-layers");
  EXPECT_EQ(cws::TrainOptions::fromMap(cwsMap).betweenLayers, "raw");
  OptionMap nliMap = nli::TrainOptions().toMap();
  nliMap.erase("between-layers");
  EXPECT_EQ(nli::TrainOptions::fromMap(nliMap).betweenLayers, "raw");
}

/// A checkpoint's values pass the command line's checks, or the load names
/// the option.
TEST(OptionTable, CheckpointValuesAreChecked) {
  OptionMap map = nmt::TrainOptions().toMap();
  map["between-layers"] = "squash";
  try {
    nmt::TrainOptions::fromMap(map);
    FAIL() << "accepted --between-layers squash";
  } catch (const DataError &error) {
    EXPECT_NE(std::string(error.what()).find("--between-layers"),
              std::string::npos)
        << error.what();
  }
  map = cws::TrainOptions().toMap();
  map["lr"] = "-1";
  EXPECT_THROW(cws::TrainOptions::fromMap(map), DataError);
  map = nli::TrainOptions().toMap();
  map["epochs"] = "many";
  EXPECT_THROW(nli::TrainOptions::fromMap(map), DataError);
}

/// Flags set, --no-NAME clears, and the given options are named by their
/// table keys (--no-progress is "progress").
TEST(OptionTable, CommandLineSetsMembersAndNamesTheGivenOnes) {
  nmt::TrainOptions options;
  CLI::App cmd("test");
  models::addOptionTable(cmd, options);
  std::vector<std::string> args = {"--no-progress", "--no-layernorm", "--cell",
                                   "gru",           "--lr",           "0.002"};
  std::reverse(args.begin(), args.end());
  cmd.parse(args);
  EXPECT_FALSE(options.progress);
  EXPECT_TRUE(options.model.noLayerNorm);
  EXPECT_EQ(options.model.cell, "gru");
  EXPECT_FLOAT_EQ(options.lr, 0.002f);
  EXPECT_EQ(models::givenTableOptions<nmt::TrainOptions>(cmd),
            (std::set<std::string>{"progress", "no-layernorm", "cell", "lr"}));
}

/// Only the rows' attributes decide what --resume may change.
TEST(OptionTable, ResumeRulesComeFromTheRows) {
  models::ResumeRules rules = models::resumeRules<nmt::TrainOptions>();
  for (const char *key : {"epochs", "max-updates", "patience", "out", "log",
                          "progress", "valid-every", "save-every"})
    EXPECT_TRUE(rules.changeable.count(key)) << key;
  for (const char *key : {"lr", "cell", "arch", "seed", "train-src"})
    EXPECT_FALSE(rules.changeable.count(key)) << key;
  EXPECT_EQ(
      rules.fromCommandLine,
      (std::set<std::string>{"out", "log", "progress", "skip-nonfinite"}));
  EXPECT_EQ(rules.paths,
            (std::set<std::string>{"train-src", "train-tgt", "valid-src",
                                   "valid-tgt", "spm-src", "spm-tgt"}));
  EXPECT_EQ(models::resumeRules<cws::TrainOptions>().paths,
            (std::set<std::string>{"train", "valid", "dict"}));
  EXPECT_EQ(models::resumeRules<nli::TrainOptions>().paths,
            (std::set<std::string>{"train", "valid", "embeddings"}));
}

/// The options every driver shares have one name, one form and one check.
TEST(OptionTable, SharedOptionsAreTheSameEverywhere) {
  for (const auto &names :
       {rowNames<nmt::TrainOptions>(), rowNames<cws::TrainOptions>(),
        rowNames<nli::TrainOptions>()}) {
    std::set<std::string> set(names.begin(), names.end());
    for (const char *key :
         {"out", "log", "save-every", "progress", "seed", "lr", "clip",
          "epochs", "cell", "init", "between-layers"})
      EXPECT_TRUE(set.count(key)) << key;
  }
}

} // namespace

// --threads N is every thread the command runs: oneDNN's and cellrt's pool
// (the cells' kernels and the layers' parallelFor). The pool once kept
// every core under --threads 1, so two one-thread runs side by side each
// handed work to a second thread on the other run's core.
TEST(Driver, ThreadsSetTheKernelsPool) {
  // driverMain restarts its process once to set OMP_WAIT_POLICY
  // (OpenMpWaits.h): set it, so that this test's process goes on.
  setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
  int seen = 0;
  models::DriverCommand probe{"probe", "records the pool's threads",
                              [](CLI::App &) {},
                              [&seen](const CLI::App &) {
                                seen = cellrt::getNumThreads();
                                return 0;
                              }};
  for (const char *threads : {"1", "2", "1"}) {
    const char *argv[] = {"prog", "probe", "--threads", threads, nullptr};
    ASSERT_EQ(models::driverMain(4, const_cast<char **>(argv),
                                 {"prog", "prog: a test", "0"}, {probe}),
              0);
    EXPECT_EQ(seen, std::atoi(threads));
  }
}
