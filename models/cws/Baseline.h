//===- models/cws/Baseline.h - Forward maximum matching ---------*- C++ -*-===//
//
// The bakeoff's baseline: from left to right, take the longest prefix of the
// rest of the sentence that is a word of the training word list, or a single
// character when none is. White space in the input is a word boundary.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_CWS_BASELINE_H
#define CELLC_MODELS_CWS_BASELINE_H

#include "models/cws/Corpus.h"

#include <string>
#include <unordered_set>
#include <vector>

namespace cws {

class MaxMatch {
public:
  explicit MaxMatch(const std::vector<std::string> &words);

  std::vector<std::string> segment(const Sentence &sentence) const;
  /// The longest word, in characters.
  size_t longestWord() const { return longest; }

private:
  std::unordered_set<std::string> dictionary;
  size_t longest = 1;
};

} // namespace cws

#endif
