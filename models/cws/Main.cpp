//===- models/cws/Main.cpp - The cws command ------------------------------===//
//
//   cws train --train GOLD [options]          train a segmenter
//   cws segment --model CKPT --input RAW      segment raw text
//   cws score --gold G --test T --words W     the SIGHAN bakeoff's scores
//   cws baseline --words W --input RAW        forward maximum matching
//
// Options are parsed by CLI11 (models/common/CommandLine.h): every command
// has --help with the defaults; a bad option or value is an error naming it.
//
//===----------------------------------------------------------------------===//

#include "models/common/CommandLine.h"
#include "models/common/Data.h"
#include "models/common/Math.h"
#include "models/common/OpenMpWaits.h"
#include "models/common/RunLock.h"
#include "models/common/Team.h"
#include "models/cws/Baseline.h"
#include "models/cws/CommandLine.h"
#include "models/cws/Score.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

using namespace cws;

namespace {

int train(const TrainRequest &request) {
  // One writer per run (models/common/RunLock.h): rank 0 writes its files.
  std::optional<models::RunLock> lock;
  if (models::Team::world().leader())
    lock.emplace("cws", request.options.out);
  TrainData data;
  auto session = prepareTraining(request, data);
  if (session)
    session->train(data);
  return 0;
}

int segment(const SegmentRequest &r) {
  auto session = Session::load(r.model);
  auto sentences = readToSegment(r.input, parseFormat(r.format));
  auto start = std::chrono::steady_clock::now();
  auto words = session->segment(sentences, r.batch);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::vector<std::string> out;
  int64_t chars = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    out.push_back(joinWords(words[i]));
    chars += int64_t(sentences[i].chars.size());
  }
  models::writeOutputLines(r.output, out);
  std::fprintf(stderr,
               "segmented %zu sentences, %lld characters in %.2f s (%.0f "
               "chars/s)\n",
               sentences.size(), (long long)chars, seconds,
               double(chars) / std::max(seconds, 1e-9));
  return 0;
}

int score(const ScoreRequest &r) {
  std::vector<std::string> gold;
  Format format = parseFormat(r.format);
  if (resolveFormat(format, r.gold, Format::Segmented) == Format::Conllu) {
    for (const Sentence &sentence : readGold(r.gold, format))
      gold.push_back(joinWords(wordsFromTags(sentence.chars, sentence.tags)));
  } else {
    gold = models::readLines(r.gold);
  }
  std::vector<std::string> test = models::readInputLines(r.test);
  std::vector<std::string> words = readWords(r.words);
  WordSet vocabulary(words.begin(), words.end());
  ScoreCounts counts = scoreLines(gold, test, vocabulary, r.gold, r.test);
  std::printf("%s", formatScore(counts, int(r.digits)).c_str());
  return 0;
}

int baseline(const BaselineRequest &r) {
  MaxMatch matcher(readWords(r.words));
  std::vector<std::string> out;
  for (const Sentence &sentence : readToSegment(r.input, parseFormat(r.format)))
    out.push_back(joinWords(matcher.segment(sentence)));
  models::writeOutputLines(r.output, out);
  return 0;
}

int run(const CommandLine &cli) {
  if (cli.threads > 0)
    models::setThreads(int(cli.threads));
  if (cli.command == "train")
    return train(cli.train);
  if (cli.command == "segment")
    return segment(cli.segment);
  if (cli.command == "score")
    return score(cli.score);
  return baseline(cli.baseline);
}

} // namespace

int main(int argc, char **argv) {
  models::preferSleepingOpenMpThreads(argv);
  CommandLine cli;
  if (std::optional<int> exit = parseCommandLine(argc, argv, cli))
    return *exit;
  return models::runCommand("cws", [&] { return run(cli); });
}
