//===- models/cws/Lexicon.h - Word-list features per character --*- C++ -*-===//
//
// An optional input besides the character embeddings (`cws train --dict`):
// for each character and each length n in 2..5, whether a word of the list
// with n characters ends at it, and whether one starts at it (the
// "dictionary features" of Zhang, Wang and Liu, AAAI 2018). Words and text
// are matched in the model's normalised form (Text.h). The bakeoff's
// baseline segments with the same kind of list; here the network learns
// when to trust it.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_CWS_LEXICON_H
#define CELLC_MODELS_CWS_LEXICON_H

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace cws {

class Lexicon {
public:
  static constexpr int64_t MaxLength = 5;
  /// Features per character: "ends here" then "starts here" per length.
  static constexpr int64_t Width = 2 * (MaxLength - 1);

  /// No words: no features.
  Lexicon() = default;
  /// The words of 2..MaxLength characters, normalised.
  explicit Lexicon(const std::vector<std::string> &words);

  bool empty() const { return list.empty(); }
  /// The normalised words, sorted (what a checkpoint stores).
  const std::vector<std::string> &words() const { return list; }

  /// [n, Width] 0/1 features of n normalised characters.
  std::vector<float> features(const std::vector<std::string> &chars) const;

private:
  std::unordered_set<std::string> set;
  std::vector<std::string> list;
};

} // namespace cws

#endif
