//===- models/common/Bleu.h - Corpus BLEU-4 ---------------------*- C++ -*-===//
//
// Two conventions, one n-gram count:
//  * sacreBLEU's default (`sacrebleu ref < hyp`): raw text tokenised with the
//    13a tokeniser (mteval-v13a), BLEU-4, 'exp' smoothing, brevity penalty
//    against the closest reference length;
//  * multi-bleu.perl: text already tokenised, split on whitespace, no
//    smoothing (a zero n-gram precision gives BLEU 0).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_BLEU_H
#define CELLC_MODELS_COMMON_BLEU_H

#include <cstdint>
#include <string>
#include <vector>

namespace models {

/// UTF-8 text as code points (a sequence cut off by the end: U+FFFD).
std::u32string decodeUtf8(const std::string &text);
/// Python's str.isspace(): the separators str.split() splits on.
bool isPythonSpace(char32_t c);

/// sacreBLEU's Tokenizer13a on one line of UTF-8 text.
std::string tokenize13a(const std::string &line);

/// Sufficient statistics of corpus BLEU-4.
struct BleuStats {
  int64_t correct[4] = {0, 0, 0, 0}, total[4] = {0, 0, 0, 0};
  int64_t hypLength = 0, refLength = 0;
  void add(const std::vector<std::string> &hyp,
           const std::vector<std::string> &ref);
};

struct BleuScore {
  double bleu = 0;          // 0..100
  double precisions[4] = {0, 0, 0, 0}; // 0..100
  double brevityPenalty = 0, ratio = 0;
  int64_t hypLength = 0, refLength = 0;
  /// `BLEU = 34.12 65.0/41.2/28.3/19.9 (BP = 0.963 ratio = 0.964 hyp_len =
  /// ... ref_len = ...)`.
  std::string str() const;
};

/// sacreBLEU's formula ('exp' smoothing).
BleuScore sacreBleuScore(const BleuStats &stats);
/// multi-bleu.perl's formula (no smoothing).
BleuScore multiBleuScore(const BleuStats &stats);

/// Corpus BLEU of raw hypotheses against raw references, sacreBLEU default
/// (13a tokenisation, case-sensitive unless lowercase).
BleuScore corpusSacreBleu(const std::vector<std::string> &hyps,
                          const std::vector<std::string> &refs,
                          bool lowercase = false);
/// Corpus BLEU of tokenised text, multi-bleu.perl style.
BleuScore corpusMultiBleu(const std::vector<std::string> &hyps,
                          const std::vector<std::string> &refs,
                          bool lowercase = false);

/// sacreBLEU's signature of the score corpusSacreBleu (`tokenize13a`) or
/// corpusMultiBleu computes: one reference, BLEU-4 without effective order;
/// 13a with 'exp' smoothing, or the text's own tokens without smoothing:
/// `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:cellc-VERSION`.
std::string bleuSignature(bool tokenize13a, bool lowercase,
                          const std::string &version);

} // namespace models

#endif
