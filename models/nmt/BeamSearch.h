//===- models/nmt/BeamSearch.h - Hypotheses of a beam search ----*- C++ -*-===//
//
// The bookkeeping of beam search over a batch of sentences (beam 1 =
// greedy), apart from the model. Row r = b*K + k is hypothesis k of
// sentence b. Each step runs only the live rows (a hypothesis still
// extended, of a sentence not finished), packed: the model runs the rows
// nextStep() lists and keeps its states after the step as one row per
// listed row, so that parentRows() can say where each row's states are.
// advance() then keeps each sentence's best K extensions; a hypothesis ends
// with </s> or at its sentence's length limit, scored by its log-
// probability / length^lengthPenalty.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_BEAMSEARCH_H
#define CELLC_MODELS_NMT_BEAMSEARCH_H

#include "models/common/Data.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nmt {

/// A finished hypothesis: its words (without </s>) and its score, the
/// log-probability / length^lengthPenalty.
struct Hypothesis {
  double score;
  std::vector<int32_t> tokens;
};

class BeamSearch {
public:
  /// limits[b]: the most words sentence b's hypotheses get.
  BeamSearch(const std::vector<int64_t> &limits, int64_t beam,
             float lengthPenalty);
  /// Over a source batch: sentence b gets at most
  /// min(maxLength, 2 * its length + 10) words.
  BeamSearch(const models::Batch &batch, int64_t beam, int64_t maxLength,
             float lengthPenalty);

  /// Lists the rows to run next; false when none is left.
  bool nextStep();
  /// Per listed row: the word it continues from, its sentence, and the row
  /// of the previous step's packed states to start from (at the first
  /// step: its sentence's row of the initial states).
  int64_t activeCount() const { return int64_t(active.size()); }
  const std::vector<int32_t> &previousWords() const { return activePrevious; }
  const std::vector<int32_t> &sentences() const { return activeSentences; }
  const std::vector<int32_t> &parentRows() const { return activeParents; }

  /// Extends the listed rows given their log-probabilities [activeCount(),
  /// vocab] over the next word.
  void advance(const float *logProbs, int64_t vocab);

  /// The best finished hypothesis of each sentence (without </s>), and
  /// into `scores` (when given) its normalised score.
  std::vector<std::vector<int32_t>>
  best(std::vector<double> *scores = nullptr) const;
  /// Each sentence's `n` best finished hypotheses, best first (fewer when
  /// the search finished fewer; equal scores in the order they finished,
  /// so the first is best()'s).
  std::vector<std::vector<Hypothesis>> nBest(int64_t n) const;

  /// An extension of row `row` by `word`, and its log-probability.
  struct Candidate {
    float score;
    int32_t row, word;
  };

private:
  using Finished = Hypothesis;
  /// Every row's hypothesis: the row of its parent's states, its last
  /// word, its score (-inf: none) and its words.
  struct Rows {
    std::vector<int32_t> parents, previous;
    std::vector<float> scores;
    std::vector<std::vector<int32_t>> hypotheses;
  };

  /// Row r's best 2K words (fewer when the vocabulary has fewer) into
  /// `rowBest`, a heap with the worst on top, given its log-probabilities.
  void collectRowBest(int64_t r, const float *row, int64_t vocab);
  /// Each live row's best 2K words, the best 2K of them first in
  /// `candidates`; returns how many of those there are.
  size_t collectCandidates(int64_t b, const float *logProbs, int64_t vocab);
  /// Keeps sentence b's best K extensions that do not end it in `next`.
  void extend(int64_t b, size_t candidateCount);
  /// Row r of `next` holds no hypothesis.
  void clearNextRow(int64_t r);
  double normalised(double score, size_t length) const;

  int64_t B, K;
  float lengthPenalty;
  std::vector<int64_t> limits;
  int64_t step = 0, longest = 0;
  // This step's rows and the next step's (swapped, so that the
  // hypotheses' vectors are reused), and each row's place among the listed.
  Rows rows, next;
  std::vector<int32_t> packedOf;
  // Per sentence.
  std::vector<std::vector<Finished>> finished;
  std::vector<bool> done;
  // The rows listed by nextStep().
  std::vector<int32_t> active, activeParents, activePrevious, activeSentences;
  std::vector<Candidate> candidates, rowBest;
};

} // namespace nmt

#endif
