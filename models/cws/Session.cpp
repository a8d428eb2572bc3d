//===- models/cws/Session.cpp - A segmenter: building, decoding, scoring --===//

#include "models/cws/Session.h"
#include "models/common/Init.h"

#include "models/common/Cells.h"
#include "models/common/RunFiles.h"

#include <cmath>

namespace cws {

using models::DataError;

TrainData loadTrainData(const TrainOptions &options) {
  if (options.train.empty())
    throw DataError("--train: no training file given");
  Format format = parseFormat(options.format);
  TrainData data;
  data.train = readGold(options.train, format);
  if (!options.valid.empty()) {
    data.valid = readGold(options.valid, format);
  } else {
    // Hold out the end of the file, as the paper holds out MSR's last 10%.
    auto held = int64_t(std::llround(options.validFraction *
                                     double(data.train.size())));
    if (held < 1 || held >= int64_t(data.train.size()))
      throw DataError(options.train + ": " +
                      std::to_string(data.train.size()) +
                      " sentences are too few to hold out --valid-fraction " +
                      models::optionText(options.validFraction) +
                      " of them for validation (or give --valid)");
    data.valid.assign(data.train.end() - held, data.train.end());
    data.train.resize(data.train.size() - size_t(held));
  }
  for (const Sentence &sentence : data.train)
    for (std::string &word : wordsFromTags(sentence.chars, sentence.tags))
      data.trainWords.insert(std::move(word));
  return data;
}

Session::Session(const TrainOptions &options, const TrainData &data)
    : options(options) {
  vocab = buildCharVocab(data.train, options.minCount);
  if (!options.dict.empty())
    lexicon = Lexicon(readWords(options.dict, parseFormat(options.format)));
  build();
  model->initialize(options.seed,
                    models::driverInitScheme(options.init, options.initScale));
  state.dropoutRng.reseed(options.seed * 7 + 3);
  runId = models::newRunId();
}

void Session::build() {
  // A .cell file's text is kept with the options in the checkpoint: the
  // model loads after the file moves or changes.
  if (options.cellSource.empty())
    options.cellSource = models::readCellSource(options.cell);
  ModelConfig config = options.modelConfig(vocab.size(), !lexicon.empty());
  model = std::make_unique<Model>(
      config, models::loadCell(config.cell, options.cellSource));
  adam.clipNorm = options.clip;
}

std::vector<std::vector<std::string>>
Session::segment(const std::vector<Sentence> &sentences, int64_t batchSize,
                 float hideListed) {
  std::vector<Encoded> encoded = encodeAll(sentences, vocab, lexicon);
  std::vector<std::vector<std::string>> words(sentences.size());
  Rng hide(12345);
  for (const auto &indices : decodingBatches(encoded, batchSize)) {
    CharBatch batch = makeCharBatch(encoded, indices);
    dropListedWords(batch, encoded, indices, hideListed, hide);
    auto tags = model->decode(batch);
    for (size_t k = 0; k < indices.size(); ++k) {
      const Sentence &sentence = sentences[indices[k]];
      std::vector<int32_t> &path = tags[k];
      // White space in the input ends a word: the next character begins
      // one (wordsFromTags ends a word before B and S).
      for (size_t i = 1; i < sentence.spaceBefore.size(); ++i)
        if (sentence.spaceBefore[i])
          path[i] = path[i] == M ? B : path[i] == E ? S : path[i];
      words[indices[k]] = wordsFromTags(sentence.chars, path);
    }
  }
  return words;
}

ScoreCounts Session::evaluate(const std::vector<Sentence> &gold,
                              const WordSet &trainWords, float hideListed) {
  auto words = segment(gold, 64, hideListed);
  ScoreCounts total;
  for (size_t i = 0; i < gold.size(); ++i)
    total.add(scoreLine(wordsFromTags(gold[i].chars, gold[i].tags), words[i],
                        trainWords));
  return total;
}

} // namespace cws
