//===- models/common/Embedding.h - Word and character embeddings -*- C++ -*-===//
//
// A [vocab, dim] table looked up by id. It can start from pretrained
// vectors (GloVe or word2vec text format) and be frozen, as the NLI set-up
// of the ATR paper keeps GloVe fixed.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_EMBEDDING_H
#define CELLC_MODELS_COMMON_EMBEDDING_H

#include "models/common/Param.h"

#include <string>
#include <vector>

namespace models {

/// How much of a vocabulary a pretrained file covered.
struct EmbeddingCoverage {
  /// Tokens looked up (the vocabulary without its reserved ids).
  int64_t tokens = 0;
  /// Found as written, and found only in lower case (GloVe is lower-cased).
  int64_t exact = 0, lowercased = 0;
  /// Vectors in the file.
  int64_t fileVectors = 0;
  double fraction() const {
    return tokens ? double(exact + lowercased) / double(tokens) : 0.0;
  }
  /// "12,345 of 14,000 tokens (88.2%): 11,000 as written, 1,345 lower-cased;
  /// 400,000 vectors in FILE".
  std::string describe(const std::string &path) const;
};

class Embedding {
public:
  /// Registers `NAME` [vocab, dim].
  Embedding(ParamStore &store, const std::string &name, int64_t vocab,
            int64_t dim);

  int64_t vocabSize() const { return table->shape[0]; }
  int64_t dim() const { return table->shape[1]; }
  Param &weights() const { return *table; }
  /// A frozen table gets no gradient and no optimiser update.
  void setFrozen(bool frozen) { table->frozen = frozen; }
  bool isFrozen() const { return table->frozen; }

  /// rows[i] = table[ids[i]] for i < n; rows is [n, dim]. Throws
  /// std::out_of_range for an id outside the table.
  void forward(const int32_t *ids, int64_t n, float *rows) const;
  /// table.grad[ids[i]] += dRows[i] (nothing when frozen).
  void backward(const int32_t *ids, int64_t n, const float *dRows) const;

  /// Overwrites the rows of `tokens` (token i is row i) that the file has,
  /// trying each token as written, then in lower case; ids below
  /// `firstId` (reserved tokens such as <pad>) are skipped. Reads GloVe
  /// (`word v1 .. vD` per line) and word2vec text (a `COUNT DIM` first
  /// line). Throws DataError naming FILE:LINE for a malformed line or a
  /// dimension other than dim().
  EmbeddingCoverage loadPretrained(const std::string &path,
                                   const std::vector<std::string> &tokens,
                                   int32_t firstId = 0);

private:
  Param *table;
};

} // namespace models

#endif
