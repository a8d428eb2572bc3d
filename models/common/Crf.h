//===- models/common/Crf.h - A linear-chain CRF over tags -------*- C++ -*-===//
//
// The output layer of sequence labelling (Chinese word segmentation with
// B/M/E/S tags): per-step emission scores from a recurrent layer plus
// learned tag-to-tag transitions. The score of tags y for a sentence of T
// steps is
//
//   s(y) = start[y_0] + sum_t emissions[t, y_t]
//          + sum_{t>=1} transitions[y_{t-1}, y_t] + end[y_{T-1}].
//
// Two training losses: the structured hinge (max-margin with a Hamming cost,
// as in the ATR paper's segmentation experiment) and the negative
// log-likelihood. Like every layer of the library it holds only its
// parameters; emissions and their gradient are the caller's.
//
// Gradient convention: every gradient ACCUMULATES, the emissions' into
// dEmissions as the parameters' into Param::grad (frozen parameters get
// none), so a batch can be summed sentence by sentence. A null dEmissions
// asks for the loss alone: then no gradient is accumulated anywhere.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_CRF_H
#define CELLC_MODELS_COMMON_CRF_H

#include "models/common/Param.h"

#include <string>
#include <vector>

namespace models {

enum class CrfLoss { MaxMargin, NegativeLogLikelihood };

class LinearChainCrf {
public:
  /// Registers `NAME.transitions` [K, K] (row: previous tag, column: next
  /// tag), `NAME.start` [K] and `NAME.end` [K]; throws std::invalid_argument
  /// when numTags < 1.
  LinearChainCrf(ParamStore &store, const std::string &name, int64_t numTags);

  int64_t numTags() const { return K; }
  Param &transitions() const { return *trans; }
  Param &start() const { return *first; }
  Param &end() const { return *last; }

  // The single-sentence calls take emissions [T, K] and tags [T]. They throw
  // std::invalid_argument when T < 1 or a tag is outside [0, K).

  /// s(tags).
  double score(const float *emissions, int64_t T, const int32_t *tags) const;
  /// The highest-scoring tags (ties broken towards lower tag ids).
  std::vector<int32_t> viterbi(const float *emissions, int64_t T) const;
  /// max_y [s(y) + hammingCost * #(y_t != gold_t)] - s(gold), >= 0. Its
  /// subgradient is the feature count of the cost-augmented argmax minus the
  /// gold one: zero when the gold path wins by the margin.
  double maxMarginLoss(const float *emissions, int64_t T, const int32_t *gold,
                       float hammingCost, float *dEmissions) const;
  /// log sum_y exp s(y) - s(gold); the gradient is the tag (and tag pair)
  /// marginals minus the gold indicators.
  double negativeLogLikelihood(const float *emissions, int64_t T,
                               const int32_t *gold, float *dEmissions) const;

  // The batch calls take the recurrent layers' time-major layout: emissions
  // [T, B, K] and gold [T, B], sentence b valid for t < lengths[b]. Padded
  // positions are never read (gold may hold anything there) and get no
  // gradient. A length outside [1, T] throws std::invalid_argument, before
  // any gradient is accumulated.

  /// The summed loss of the batch's sentences.
  double loss(const float *emissions, const int32_t *lengths, int64_t T,
              int64_t B, const int32_t *gold, CrfLoss kind, float hammingCost,
              float *dEmissions) const;
  /// The Viterbi tags of every sentence (lengths[b] of them).
  std::vector<std::vector<int32_t>> decode(const float *emissions,
                                           const int32_t *lengths, int64_t T,
                                           int64_t B) const;

private:
  /// One sentence, possibly a column of a time-major batch.
  struct Sentence;

  /// Checks T and the gold tags (gold may be null) and gathers the latter.
  Sentence view(const float *emissions, int64_t T, int64_t stride,
                const int32_t *gold, int64_t goldStride,
                float *dEmissions) const;
  /// Sentence b of a time-major batch.
  Sentence column(const float *emissions, const int32_t *lengths, int64_t T,
                  int64_t B, int64_t b, const int32_t *gold,
                  float *dEmissions) const;
  double pathScore(const Sentence &s, const int32_t *path) const;
  std::vector<int32_t> bestPath(const Sentence &s, float hammingCost) const;
  void addPathFeatures(const Sentence &s, const int32_t *path,
                       float sign) const;
  double maxMargin(const Sentence &s, float hammingCost) const;
  double nll(const Sentence &s) const;
  void forwardScores(const Sentence &s, std::vector<double> &alpha) const;
  void backwardScores(const Sentence &s, std::vector<double> &beta) const;
  void addMarginals(const Sentence &s, const std::vector<double> &alpha,
                    const std::vector<double> &beta, double logZ) const;

  int64_t K;
  Param *trans, *first, *last;
};

} // namespace models

#endif
