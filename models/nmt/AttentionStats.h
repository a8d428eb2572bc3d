//===- models/nmt/AttentionStats.h - Where the attention looks --*- C++ -*-===//
//
// `nmt analyze`'s attention summary: while a model force-decodes the
// reference, every target step's attention weights over its source. A model
// whose attention learnt to align puts most of a step's weight on a few
// source words near the diagonal; one that did not spreads it (entropy near
// log of the source length), or parks it on the source's </s>, and its
// decoder leans on the target words alone. Over every (sentence, target
// step), the means of:
//   - the entropy of the weights (nats), and it over log(source length):
//     1 is uniform, 0 one word;
//   - the largest weight;
//   - the weight on the source's last word (its </s>);
//   - |argmax / (Tx - 1) - j / (Ty - 1)|: how far the most-attended word is
//     from the diagonal of the sentence pair (0 on it; about 1/3 for a
//     random position).
// The first few sentences' weight matrices are kept for pictures.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_ATTENTIONSTATS_H
#define CELLC_MODELS_NMT_ATTENTIONSTATS_H

#include <cstdint>
#include <string>
#include <vector>

namespace nmt {

class AttentionStats {
public:
  /// One sentence pair's weights: row j (target word j) over the source.
  struct Example {
    std::vector<std::string> source, target;
    std::vector<std::vector<double>> weights;
  };

  /// `keep`: how many sentences' matrices to keep (the first ones added).
  explicit AttentionStats(int64_t keep) : keep(keep) {}

  /// Adds a batch's weights alpha [Ty, Tx, B] (zero where masked) for
  /// sentences of srcLen[b] source and tgtLen[b] target words; the words
  /// (one list per sentence, or empty) label the kept examples.
  void add(const std::vector<float> &alpha, int64_t Ty, int64_t Tx,
           const std::vector<int32_t> &srcLen,
           const std::vector<int32_t> &tgtLen,
           const std::vector<std::vector<std::string>> &sourceWords = {},
           const std::vector<std::vector<std::string>> &targetWords = {});

  int64_t steps() const { return count; }
  double entropy() const { return mean(sums.entropy); }
  double normalizedEntropy() const { return mean(sums.normalizedEntropy); }
  double maxWeight() const { return mean(sums.maxWeight); }
  double onLastWord() const { return mean(sums.onLastWord); }
  double diagonalDistance() const { return mean(sums.diagonalDistance); }
  const std::vector<Example> &examples() const { return kept; }

private:
  struct Sums {
    double entropy = 0, normalizedEntropy = 0, maxWeight = 0, onLastWord = 0,
           diagonalDistance = 0;
  };
  /// Adds target step j of a sentence: its weights over Tx source words.
  void addStep(const std::vector<double> &weights, int64_t j, int64_t Ty);
  double mean(double sum) const { return count ? sum / double(count) : 0.0; }

  int64_t keep;
  int64_t count = 0;
  Sums sums;
  std::vector<Example> kept;
};

} // namespace nmt

#endif
