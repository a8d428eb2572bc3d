//===- ConfigFileTest.cpp - Options from and to TOML files
//-----------------===//
//
// models/common/ConfigFile.h through models::parseCommands, on a command
// with each kind of option the drivers have: numbers, text, a flag, a list
// and a required option.
//
//===----------------------------------------------------------------------===//

#include "models/common/CommandLine.h"

#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace {

struct Options {
  double lr = 0.5;
  int64_t epochs = 10;
  std::string cell = "atr", model;
  bool resume = false;
  std::vector<std::string> inputs;
};

/// Parses `args` (after the program's name) into `o`; the exit code when
/// it stops, and what it printed on stdout and stderr.
std::optional<int> parse(std::vector<std::string> args, Options &o,
                         std::string *out = nullptr,
                         std::string *err = nullptr) {
  CLI::App app("test", "prog");
  CLI::App *cmd = app.add_subcommand("train", "train");
  models::option(*cmd, "lr", o.lr, "rate");
  models::option(*cmd, "epochs", o.epochs, "epochs");
  models::option(*cmd, "cell", o.cell, "cell");
  cmd->add_option("--model", o.model, "a required file")->required();
  cmd->add_flag("--resume", o.resume, "a flag");
  cmd->add_option("--inputs", o.inputs, "a list");
  args.insert(args.begin(), "prog");
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  std::optional<int> exit =
      models::parseCommands(app, int(argv.size()), argv.data());
  std::string printed = testing::internal::GetCapturedStdout();
  std::string errors = testing::internal::GetCapturedStderr();
  if (out)
    *out = printed;
  if (err)
    *err = errors;
  return exit;
}

std::string temp(const std::string &name, const std::string &text) {
  std::string path = testing::TempDir() + "config-file-" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigFile, PrintedConfigurationReadsBackTheSame) {
  Options given;
  std::string printed;
  ASSERT_EQ(parse({"train", "--lr", "2e-3", "--model", "it's.ckpt", "--resume",
                   "--inputs", "a", "b c", "--print-config"},
                  given, &printed),
            0);
  EXPECT_NE(printed.find("lr = 2e-3\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("epochs = 10\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("cell = 'atr'\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("model = \"it's.ckpt\"\n"), std::string::npos);
  EXPECT_NE(printed.find("resume = true\n"), std::string::npos) << printed;
  EXPECT_NE(printed.find("inputs = ['a', 'b c']\n"), std::string::npos);
  EXPECT_EQ(printed.find("print-config ="), std::string::npos) << printed;
  std::string path = temp("round-trip.toml", printed);
  Options read;
  std::string again;
  ASSERT_EQ(parse({"train", "--config", path, "--print-config"}, read, &again),
            0);
  EXPECT_EQ(again, printed);
  ASSERT_EQ(parse({"train", "--config", path}, read), std::nullopt);
  EXPECT_EQ(read.lr, 2e-3);
  EXPECT_EQ(read.model, "it's.ckpt");
  EXPECT_TRUE(read.resume);
  EXPECT_EQ(read.inputs, (std::vector<std::string>{"a", "b c"}));
}

TEST(ConfigFile, TheCommandLineOverridesTheFile) {
  std::string path = temp("override.toml", "lr = 0.25\nepochs = 3\n"
                                           "model = \"m\"\ninputs = [\"x\"]\n"
                                           "resume = true\n");
  Options o;
  ASSERT_EQ(
      parse({"train", "--lr", "0.125", "--config", path, "--inputs", "y", "z"},
            o),
      std::nullopt);
  EXPECT_EQ(o.lr, 0.125);
  EXPECT_EQ(o.epochs, 3);
  EXPECT_EQ(o.model, "m"); // a required option may come from the file
  EXPECT_TRUE(o.resume);
  EXPECT_EQ(o.inputs, (std::vector<std::string>{"y", "z"}));
  // A flag set false in the file stays false.
  Options off;
  ASSERT_EQ(parse({"train", "--config",
                   temp("off.toml", "resume = false\nmodel = 'm'\n")},
                  off),
            std::nullopt);
  EXPECT_FALSE(off.resume);
}

TEST(ConfigFile, ErrorsNameTheFileAndTheKey) {
  auto error = [](const std::string &name, const std::string &text) {
    Options o;
    std::string err;
    std::string path = temp(name, text);
    EXPECT_EQ(parse({"train", "--config", path}, o, nullptr, &err), 2);
    EXPECT_NE(err.find(path), std::string::npos) << err;
    return err;
  };
  EXPECT_NE(error("unknown.toml", "model = 'm'\nepoch = 3\n")
                .find("key 'epoch': prog train has no option --epoch"),
            std::string::npos);
  EXPECT_NE(error("type.toml", "model = 'm'\nepochs = \"three\"\n")
                .find("key 'epochs': --epochs: not a whole number"),
            std::string::npos);
  EXPECT_NE(error("nan.toml", "model = 'm'\nlr = nan\n")
                .find("key 'lr': --lr: must be finite"),
            std::string::npos);
  EXPECT_NE(error("flag.toml", "model = 'm'\nresume = 3\n")
                .find("key 'resume': a flag is true or false"),
            std::string::npos);
  EXPECT_NE(error("list.toml", "model = 'm'\ncell = ['a', 'b']\n")
                .find("key 'cell': one value, not a list"),
            std::string::npos);
  EXPECT_NE(
      error("section.toml", "[train]\nmodel = 'm'\n").find("section [train]"),
      std::string::npos);
  Options o;
  std::string err;
  std::string missing = testing::TempDir() + "config-file-none.toml";
  EXPECT_EQ(parse({"train", "--config", missing}, o, nullptr, &err), 2);
  EXPECT_NE(err.find("--config " + missing +
                     ": cannot read the file: No such file or directory"),
            std::string::npos)
      << err;
  // Without the file, a required option is still required.
  EXPECT_EQ(parse({"train"}, o, nullptr, &err), 2);
  EXPECT_NE(err.find("--model is required"), std::string::npos) << err;
}

} // namespace
