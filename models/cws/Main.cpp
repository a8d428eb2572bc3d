//===- models/cws/Main.cpp - The cws command ------------------------------===//
//
//   cws train --train GOLD [options]          train a segmenter
//   cws segment --model CKPT --input RAW      segment raw text
//   cws score --gold G --test T --words W     the SIGHAN bakeoff's scores
//   cws baseline --words W --input RAW        forward maximum matching
//
// The driver kit (models/common/Driver.h) parses the options: every command
// has --help with the defaults, --config FILE and --threads; a bad option or
// value is an error naming it. `train`'s options are the table in
// models/cws/Options.h.
//
//===----------------------------------------------------------------------===//

#include "models/common/Data.h"
#include "models/common/Driver.h"
#include "models/cws/Baseline.h"
#include "models/cws/Score.h"
#include "models/cws/Session.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

using namespace cws;

namespace {

using models::option;

const char *const formatHelp = detail::FormatHelp;
const char *inputFormatHelp = "auto (CoNLL-U for .conll/.conllu, else raw), "
                              "raw, segmented or conllu";

struct SegmentRequest {
  std::string model, input, output, format = "auto";
  int64_t batch = 64;
};

void addSegmentOptions(CLI::App &cmd, SegmentRequest &r) {
  cmd.add_option("--model", r.model, "checkpoint")->required();
  option(cmd, "input", r.input,
         "raw text (default: stdin), or a CoNLL-U file's sentences");
  option(cmd, "output", r.output, "segmented text (default: stdout)");
  option(cmd, "format", r.format, inputFormatHelp)
      ->check(CLI::IsMember({"auto", "raw", "segmented", "conllu"}));
  option(cmd, "batch", r.batch, "sentences per batch")
      ->check(CLI::Range(1, 100000));
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

struct ScoreRequest {
  std::string gold, test, words, format = "auto";
  int64_t digits = 3;
};

void addScoreOptions(CLI::App &cmd, ScoreRequest &r) {
  cmd.add_option("--gold", r.gold, "the gold segmentation")->required();
  cmd.add_option("--test", r.test, "the segmentation to score")->required();
  cmd.add_option("--words", r.words,
                 "the training word list (or a training corpus) for OOV")
      ->required();
  option(cmd, "format", r.format, std::string("gold: ") + formatHelp)
      ->check(CLI::IsMember({"auto", "segmented", "conllu"}));
  option(cmd, "digits", r.digits, "decimals printed (the script prints 3)")
      ->check(CLI::Range(1, 9));
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

struct BaselineRequest {
  std::string words, input, output, format = "auto";
};

void addBaselineOptions(CLI::App &cmd, BaselineRequest &r) {
  cmd.add_option("--words", r.words,
                 "the training word list (or a training corpus)")
      ->required();
  option(cmd, "input", r.input,
         "raw text, one sentence per line (default: stdin), or a CoNLL-U "
         "file's sentences");
  option(cmd, "output", r.output, "segmented text (default: stdout)");
  option(cmd, "format", r.format, inputFormatHelp)
      ->check(CLI::IsMember({"auto", "raw", "segmented", "conllu"}));
}

int baseline(const BaselineRequest &r) {
  MaxMatch matcher(readWords(r.words));
  std::vector<std::string> out;
  for (const Sentence &sentence : readToSegment(r.input, parseFormat(r.format)))
    out.push_back(joinWords(matcher.segment(sentence)));
  models::writeOutputLines(r.output, out);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  using models::requestCommand;
  return models::driverMain(
      argc, argv,
      {"cws", "cws: Chinese word segmentation over cellc-compiled cells",
       CELLC_VERSION},
      {models::trainCommand("Train a segmenter: character BiRNN + CRF "
                            "(max-margin)",
                            cws::runRules()),
       requestCommand("segment",
                      "Segment text, one sentence per line, into words "
                      "separated by two spaces",
                      addSegmentOptions, segment),
       requestCommand("score",
                      "Word precision, recall, F1 and OOV recall as the "
                      "SIGHAN bakeoff's score script",
                      addScoreOptions, score),
       requestCommand("baseline",
                      "Forward maximum matching with a word list (the "
                      "bakeoff's baseline)",
                      addBaselineOptions, baseline)});
}
