//===- models/cws/Batch.cpp - Character ids in padded batches -------------===//

#include "models/cws/Batch.h"

#include "models/cws/Text.h"

#include <algorithm>
#include <numeric>

namespace cws {

Vocab buildCharVocab(const std::vector<Sentence> &sentences,
                     int64_t minCount) {
  std::vector<std::vector<std::string>> normalised;
  for (const Sentence &sentence : sentences) {
    normalised.emplace_back();
    for (const std::string &ch : sentence.chars)
      normalised.back().push_back(normalizeChar(ch));
  }
  return Vocab::build(normalised, 0, minCount);
}

Encoded encode(const Sentence &sentence, const Vocab &vocab,
               const Lexicon &lexicon) {
  Encoded encoded;
  std::vector<std::string> normalised;
  for (const std::string &ch : sentence.chars)
    normalised.push_back(normalizeChar(ch));
  encoded.ids = vocab.encode(normalised);
  encoded.tags = sentence.tags;
  if (lexicon.empty())
    return encoded;
  encoded.features = lexicon.features(normalised);
  // The gold words (B M* E spans) whose "ends here" feature is set.
  const int64_t W = Lexicon::Width, starts = Lexicon::MaxLength - 1;
  for (int64_t i = 0, start = 0; i < int64_t(encoded.tags.size()); ++i) {
    if (encoded.tags[i] == B || encoded.tags[i] == S)
      start = i;
    int64_t length = i - start + 1;
    if (encoded.tags[i] != E || length < 2 || length > Lexicon::MaxLength ||
        encoded.features[i * W + length - 2] == 0.f)
      continue;
    encoded.listedWords.push_back(
        {i * W + length - 2, start * W + starts + length - 2});
  }
  return encoded;
}

std::vector<Encoded> encodeAll(const std::vector<Sentence> &sentences,
                               const Vocab &vocab, const Lexicon &lexicon) {
  std::vector<Encoded> all;
  for (const Sentence &sentence : sentences)
    all.push_back(encode(sentence, vocab, lexicon));
  return all;
}

CharBatch makeCharBatch(const std::vector<Encoded> &sentences,
                        const std::vector<int64_t> &indices) {
  CharBatch batch;
  batch.B = int64_t(indices.size());
  for (int64_t i : indices)
    batch.T = std::max<int64_t>(batch.T, sentences[i].ids.size());
  batch.ids.assign(batch.T * batch.B, Vocab::Pad);
  const Encoded *first = indices.empty() ? nullptr : &sentences[indices[0]];
  bool tagged = first && !first->tags.empty();
  if (tagged)
    batch.tags.assign(batch.T * batch.B, 0);
  if (first && !first->ids.empty())
    batch.featureWidth = int64_t(first->features.size() / first->ids.size());
  int64_t F = batch.featureWidth;
  batch.features.assign(batch.T * batch.B * F, 0.f);
  for (int64_t b = 0; b < batch.B; ++b) {
    const Encoded &s = sentences[indices[b]];
    int64_t n = int64_t(s.ids.size());
    for (int64_t t = 0; t < n; ++t) {
      batch.ids[t * batch.B + b] = s.ids[t];
      if (tagged)
        batch.tags[t * batch.B + b] = s.tags[t];
      std::copy_n(s.features.data() + t * F, F,
                  batch.features.data() + (t * batch.B + b) * F);
    }
    batch.lengths.push_back(int32_t(n));
    batch.chars += n;
  }
  return batch;
}

void dropListedWords(CharBatch &batch, const std::vector<Encoded> &sentences,
                     const std::vector<int64_t> &indices, float p, Rng &rng) {
  if (p <= 0.f || batch.featureWidth == 0)
    return;
  const int64_t W = batch.featureWidth;
  for (int64_t b = 0; b < int64_t(indices.size()); ++b)
    for (const auto &word : sentences[indices[b]].listedWords) {
      if (rng.uniform() >= p)
        continue;
      // Index t * W + k of the sentence is (t * B + b) * W + k in the batch.
      for (int64_t index : word)
        batch.features[(index / W * batch.B + b) * W + index % W] = 0.f;
    }
}

namespace {

std::vector<int64_t> nonEmpty(const std::vector<Encoded> &sentences) {
  std::vector<int64_t> order;
  for (size_t i = 0; i < sentences.size(); ++i)
    if (!sentences[i].ids.empty())
      order.push_back(int64_t(i));
  return order;
}

void sortByLength(const std::vector<Encoded> &sentences,
                  std::vector<int64_t>::iterator begin,
                  std::vector<int64_t>::iterator end) {
  std::stable_sort(begin, end, [&](int64_t a, int64_t b) {
    return sentences[a].ids.size() < sentences[b].ids.size();
  });
}

void cut(const std::vector<int64_t> &order, size_t begin, size_t end,
         int64_t batchSize, std::vector<std::vector<int64_t>> &batches) {
  for (size_t start = begin; start < end; start += size_t(batchSize))
    batches.emplace_back(order.begin() + start,
                         order.begin() + std::min(end, start + batchSize));
}

} // namespace

std::vector<std::vector<int64_t>>
trainingBatches(const std::vector<Encoded> &sentences, int64_t batchSize,
                Rng &rng) {
  std::vector<int64_t> order = nonEmpty(sentences);
  models::shuffle(order, rng);
  size_t window = size_t(batchSize) * 50;
  std::vector<std::vector<int64_t>> batches;
  for (size_t start = 0; start < order.size(); start += window) {
    size_t end = std::min(order.size(), start + window);
    sortByLength(sentences, order.begin() + start, order.begin() + end);
    cut(order, start, end, batchSize, batches);
  }
  models::shuffle(batches, rng);
  return batches;
}

std::vector<std::vector<int64_t>>
decodingBatches(const std::vector<Encoded> &sentences, int64_t batchSize) {
  std::vector<int64_t> order = nonEmpty(sentences);
  sortByLength(sentences, order.begin(), order.end());
  std::vector<std::vector<int64_t>> batches;
  cut(order, 0, order.size(), batchSize, batches);
  return batches;
}

} // namespace cws
