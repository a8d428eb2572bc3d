//===- models/cws/Batch.h - Character ids in padded batches -----*- C++ -*-===//
//
// Sentences become ids of their normalised characters (Text.h) in a
// character vocabulary, and batches of them time-major [T, B] as the
// recurrent layers take them.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_CWS_BATCH_H
#define CELLC_MODELS_CWS_BATCH_H

#include "models/common/Data.h"
#include "models/common/Math.h"
#include "models/cws/Corpus.h"
#include "models/cws/Lexicon.h"

#include <array>
#include <cstdint>
#include <vector>

namespace cws {

using models::Rng;
using models::Vocab;

/// A sentence as ids (and its gold tags, if any), with its word-list
/// features [n, Lexicon::Width] when the model has a lexicon.
struct Encoded {
  std::vector<int32_t> ids, tags;
  std::vector<float> features;
  /// For each gold word the lexicon lists: its two feature indices ("ends
  /// here" at its last character, "starts here" at its first).
  std::vector<std::array<int64_t, 2>> listedWords;
};

/// The normalised characters seen at least minCount times (rarer ones are
/// <unk>, so that <unk> is trained on the characters most like the unseen
/// ones of new text), most frequent first.
Vocab buildCharVocab(const std::vector<Sentence> &sentences, int64_t minCount);

Encoded encode(const Sentence &sentence, const Vocab &vocab,
               const Lexicon &lexicon);
std::vector<Encoded> encodeAll(const std::vector<Sentence> &sentences,
                               const Vocab &vocab, const Lexicon &lexicon);

/// A padded batch: sentence b holds ids[t * B + b] for t < lengths[b]
/// (<pad> after), tags likewise (empty when the sentences have none), and
/// features [T, B, featureWidth] (zeros after).
struct CharBatch {
  int64_t T = 0, B = 0, chars = 0, featureWidth = 0;
  std::vector<int32_t> ids, tags, lengths;
  std::vector<float> features;
};

/// The batch of sentences[indices]; none of them may be empty.
CharBatch makeCharBatch(const std::vector<Encoded> &sentences,
                        const std::vector<int64_t> &indices);

/// Clears the features of each listed gold word of the batch with
/// probability p: training then sees words missing from the list, as new
/// text has them (the list was built from the training text, which it
/// covers completely).
void dropListedWords(CharBatch &batch, const std::vector<Encoded> &sentences,
                     const std::vector<int64_t> &indices, float p, Rng &rng);

/// Training batches of `batchSize` sentences in an order drawn from `rng`:
/// shuffle, sort windows of 50 batches by length (little padding), cut,
/// shuffle the batches. Empty sentences are left out.
std::vector<std::vector<int64_t>>
trainingBatches(const std::vector<Encoded> &sentences, int64_t batchSize,
                Rng &rng);

/// Batches for decoding, sentences of similar lengths together; empty
/// sentences are left out.
std::vector<std::vector<int64_t>>
decodingBatches(const std::vector<Encoded> &sentences, int64_t batchSize);

} // namespace cws

#endif
