//===- models/nmt/Main.cpp - The nmt command ------------------------------===//
//
//   nmt train [options]            train (default: the embedded numbers task)
//   nmt translate --model CKPT     translate raw lines (stdin or --input)
//   nmt score --ref R --hyp H      corpus BLEU-4 (sacreBLEU 13a or multi-bleu)
//   nmt task --split S --side SIDE print the embedded task's text
//
//===----------------------------------------------------------------------===//

#include "models/common/Bleu.h"
#include "models/nmt/Trainer.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sys/stat.h>

using namespace nmt;

namespace {

const char *usage = R"(usage:
  nmt train [--task numbers|files] [--out model.ckpt] [--resume] [options]
      data:  --task-train N --task-valid N --task-test N --task-max N
             --task-seed N | --train-src F --train-tgt F --valid-src F
             --valid-tgt F [--tokenizer space|bpe] [--bpe-src N --bpe-tgt N]
             [--spm-src M --spm-tgt M] [--src-vocab N --tgt-vocab N]
             [--min-count N] [--max-len 80]
      model: --cell atr|gru|lstm|FILE.cell[:NAME] --emb N --hidden N --att N --readout N
             --dropout P --init-scale S
      train: --lr 5e-4 --clip 5 --max-tokens N --epochs N --max-updates N
             --patience N --lr-decay plateau|epoch|none --seed N
             --save-every N --log FILE --log-every N --valid-beam K
             --valid-max N --no-progress
  every command: --threads N (OpenMP threads for oneDNN; 1 is fastest for
             small models)
  nmt translate --model CKPT [--input F] [--output F] [--beam 5]
             [--length-penalty 1.0] [--batch-size 32] [--tokenized]
  nmt score --ref F --hyp F [--tokenize 13a|none] [--lc]
  nmt task [--split train|valid|test] [--side src|tgt|tgt-raw] [--task-* ...]
)";

struct Args {
  std::map<std::string, std::string> values;
  std::set<std::string> flags;
  std::set<std::string> used;
  std::string get(const std::string &key, const std::string &fallback = "") {
    used.insert(key);
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  }
  bool flag(const std::string &key) {
    used.insert(key);
    return flags.count(key) > 0;
  }
};

Args parse(int argc, char **argv, const std::set<std::string> &flagNames) {
  Args args;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0)
      throw DataError("unexpected argument '" + arg + "'");
    std::string key = arg.substr(2);
    size_t eq = key.find('=');
    if (eq != std::string::npos) {
      args.values[key.substr(0, eq)] = key.substr(eq + 1);
    } else if (flagNames.count(key)) {
      args.flags.insert(key);
    } else {
      if (i + 1 >= argc)
        throw DataError("--" + key + " needs a value");
      args.values[key] = argv[++i];
    }
  }
  return args;
}

bool exists(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

int train(Args &args) {
  std::map<std::string, std::string> map = args.values;
  auto known = TrainOptions().toMap();
  for (const auto &entry : map)
    if (!known.count(entry.first))
      throw DataError("unknown option --" + entry.first + " (see nmt --help)");
  bool resume = args.flag("resume");
  if (args.flag("no-progress"))
    map["progress"] = "0";
  TrainOptions cli = TrainOptions::fromMap(map);
  std::unique_ptr<Session> session;
  if (resume && exists(cli.out)) {
    session = Session::load(cli.out);
    // What may change on resume: how long to go on and how to report.
    for (const char *key : {"epochs", "max-updates", "patience", "progress",
                            "log", "log-every", "save-every"})
      if (map.count(key)) {
        auto merged = session->options.toMap();
        merged[key] = map[key];
        session->options = TrainOptions::fromMap(merged);
      }
    if (session->state.finished && !map.count("epochs")) {
      std::fprintf(stderr, "nmt: %s has finished training\n", cli.out.c_str());
      return 0;
    }
    session->state.finished = false;
    std::fprintf(stderr, "resuming %s at epoch %lld, update %lld\n",
                 cli.out.c_str(), (long long)session->state.epoch + 1,
                 (long long)session->state.updates);
  }
  TrainData data = loadTrainData(session ? session->options : cli);
  if (!session)
    session = std::make_unique<Session>(cli, data);
  session->train(data);
  return 0;
}

std::vector<std::string> readInput(const std::string &path) {
  if (!path.empty() && path != "-")
    return readLines(path);
  std::vector<std::string> lines;
  std::string line;
  int64_t number = 0;
  while (std::getline(std::cin, line)) {
    ++number;
    if (findInvalidUtf8(line) >= 0)
      throw DataError("<stdin>:" + std::to_string(number) + ": invalid UTF-8");
    lines.push_back(line);
  }
  return lines;
}

int translate(Args &args) {
  std::string modelPath = args.get("model");
  if (modelPath.empty())
    throw DataError("translate needs --model CKPT");
  auto session = Session::load(modelPath);
  auto lines = readInput(args.get("input"));
  int64_t beam = std::stoll(args.get("beam", "5"));
  float lp = std::stof(args.get("length-penalty", "1.0"));
  int64_t batch = std::stoll(args.get("batch-size", "32"));
  bool tokenized = args.flag("tokenized");
  std::vector<std::string> tokens;
  int64_t words = 0;
  auto start = std::chrono::steady_clock::now();
  auto out = session->translate(lines, beam, lp, batch, &tokens, &words);
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  std::string outPath = args.get("output");
  std::ofstream file;
  if (!outPath.empty()) {
    file.open(outPath);
    if (!file)
      throw DataError(outPath + ": cannot write");
  }
  std::ostream &os = outPath.empty() ? std::cout : file;
  for (size_t i = 0; i < out.size(); ++i)
    os << (tokenized ? tokens[i] : out[i]) << "\n";
  std::fprintf(stderr,
               "translated %zu sentences, %lld target words in %.2f s "
               "(%.0f words/s, beam %lld)\n",
               lines.size(), (long long)words, seconds, words / seconds,
               (long long)beam);
  return 0;
}

int score(Args &args) {
  std::string ref = args.get("ref"), hyp = args.get("hyp");
  if (ref.empty() || hyp.empty())
    throw DataError("score needs --ref and --hyp");
  auto refs = readLines(ref);
  auto hyps = readInput(hyp);
  if (refs.size() != hyps.size())
    throw DataError("different line counts: " + ref + " has " +
                    std::to_string(refs.size()) + " lines, " + hyp + " has " +
                    std::to_string(hyps.size()));
  std::string tokenize = args.get("tokenize", "13a");
  bool lc = args.flag("lc");
  BleuScore score;
  if (tokenize == "13a")
    score = corpusSacreBleu(hyps, refs, lc);
  else if (tokenize == "none")
    score = corpusMultiBleu(hyps, refs, lc);
  else
    throw DataError("--tokenize must be 13a (sacreBLEU) or none "
                    "(multi-bleu on tokenised text)");
  std::printf("%s\n", score.str().c_str());
  return 0;
}

int task(Args &args) {
  TrainOptions options = TrainOptions::fromMap(args.values);
  NumbersTask t = makeNumbersTask(options.taskSeed, options.taskTrain,
                                  options.taskValid, options.taskTest,
                                  options.taskMax);
  std::string split = args.get("split", "test"), side = args.get("side", "src");
  const TextSplit *s = split == "train"   ? &t.train
                       : split == "valid" ? &t.valid
                       : split == "test"  ? &t.test
                                          : nullptr;
  if (!s)
    throw DataError("--split must be train, valid or test");
  for (size_t i = 0; i < s->src.size(); ++i) {
    if (side == "src")
      std::printf("%s\n", s->src[i].c_str());
    else if (side == "tgt")
      std::printf("%s\n", s->tgt[i].c_str());
    else if (side == "tgt-raw")
      std::printf("%s\n", joinTokens(splitWhitespace(s->tgt[i]), "").c_str());
    else
      throw DataError("--side must be src, tgt or tgt-raw");
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" ||
      std::string(argv[1]) == "-h") {
    std::fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  try {
    Args args = parse(argc, argv,
                      {"resume", "no-progress", "tokenized", "lc", "help"});
    // `nmt train --help` prints the usage; it must never start a run.
    if (args.flags.count("help")) {
      std::fputs(usage, stdout);
      return 0;
    }
    if (args.values.count("threads")) {
      setThreads(std::stoi(args.values["threads"]));
      args.values.erase("threads");
    }
    if (command == "train")
      return train(args);
    if (command == "translate")
      return translate(args);
    if (command == "score")
      return score(args);
    if (command == "task")
      return task(args);
    std::fprintf(stderr, "nmt: unknown command '%s'\n%s", command.c_str(),
                 usage);
    return 2;
  } catch (const std::exception &error) {
    std::fprintf(stderr, "nmt: error: %s\n", error.what());
    return 1;
  }
}
