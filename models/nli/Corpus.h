//===- models/nli/Corpus.h - Sentence pairs with inference labels -*- C++ -*-===//
//
// SNLI as three aligned files (`s1.SPLIT` premises, `s2.SPLIT` hypotheses,
// `labels.SPLIT`), SICK as `SPLIT.tsv` (premise TAB hypothesis TAB label,
// 0 entailment, 1 neutral, 2 contradiction), and unlabelled pairs to
// predict (premise TAB hypothesis). A split is named by its path without
// the file parts: `DIR/dev` reads DIR/s1.dev ... or DIR/dev.tsv.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NLI_CORPUS_H
#define CELLC_MODELS_NLI_CORPUS_H

#include "models/common/Data.h"

#include <array>
#include <string>
#include <vector>

namespace nli {

/// Label ids in the order SICK numbers them.
enum Label : int32_t { Entailment = 0, Neutral = 1, Contradiction = 2 };
inline constexpr std::array<const char *, 3> kLabelNames = {
    "entailment", "neutral", "contradiction"};

struct Pair {
  std::vector<std::string> premise, hypothesis;
  int32_t label = -1; // -1: unlabelled
};

/// Tokens of a sentence: split on spaces, punctuation split off words
/// (SICK is not tokenised; SNLI is, and stays as it is), optionally
/// lower-cased.
std::vector<std::string> tokenize(const std::string &sentence, bool lower);

/// A labelled split (SNLI files or SICK .tsv; see above). DataError naming
/// FILE:LINE for a missing file, an unknown label, a wrong column count,
/// an empty sentence or invalid UTF-8.
std::vector<Pair> readSplit(const std::string &split, bool lower);
/// `premise TAB hypothesis` per line, unlabelled.
std::vector<Pair> readUnlabelled(const std::string &path, bool lower);

/// Parses a label name or SICK digit; -1 when it is neither.
int32_t parseLabel(const std::string &text);

} // namespace nli

#endif
