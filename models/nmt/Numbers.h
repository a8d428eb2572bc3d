//===- models/nmt/Numbers.h - The embedded default task ---------*- C++ -*-===//
//
// Numbers written in English words -> the same number in German words,
// generated from a seed (no files): "three hundred forty-two" ->
// "dreihundertzweiundvierzig", tokenised as German number words
// ("drei hundert zwei und vierzig"); tens and units swap places
// ("twenty-one" -> "ein und zwanzig"), so the model must reorder.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_NUMBERS_H
#define CELLC_MODELS_NMT_NUMBERS_H

#include <cstdint>
#include <string>
#include <vector>

namespace nmt {

/// "three hundred forty-two" (American style, no "and"), 1 <= n <= 999999.
std::string englishNumber(int64_t n);
/// {"drei", "hundert", "zwei", "und", "vierzig"}.
std::vector<std::string> germanNumberTokens(int64_t n);
/// Splits English text on spaces and hyphens, keeping "-" as a token.
std::vector<std::string> tokenizeEnglishNumber(const std::string &text);

/// Parallel lines, source tokenised (English words, "-" split off), target
/// tokenised (German number words).
struct TextSplit {
  std::vector<std::string> src, tgt;
};
struct NumbersTask {
  TextSplit train, valid, test;
};
/// Distinct numbers across the three splits; the number of digits is drawn
/// uniformly from 1..digits(maxNumber).
NumbersTask makeNumbersTask(uint64_t seed, int64_t trainSize,
                            int64_t validSize, int64_t testSize,
                            int64_t maxNumber = 999999);

} // namespace nmt

#endif
