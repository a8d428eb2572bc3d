//===- models/common/Chrf.h - Corpus chrF ----------------------*- C++ -*-===//
//
// chrF (Popović 2015) as sacreBLEU computes it by default (`sacrebleu -m
// chrf`): character n-grams of orders 1..6 of each line with its whitespace
// removed, counts clipped by the reference's; hypothesis, reference and
// matching n-gram counts summed over the corpus per order; precision and
// recall each averaged over the orders both sides have n-grams of; then
// F-beta of the two averages, beta = 2 (chrF2).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_CHRF_H
#define CELLC_MODELS_COMMON_CHRF_H

#include <cstdint>
#include <string>
#include <vector>

namespace models {

/// Sufficient statistics of corpus chrF: per order n (index n - 1), the
/// hypothesis' n-grams, the reference's, and the matches.
struct ChrfStats {
  static constexpr int Order = 6;
  int64_t hyp[Order] = {}, ref[Order] = {}, match[Order] = {};
  /// Adds one line pair (UTF-8; characters are code points).
  void add(const std::string &hyp, const std::string &ref);
};

struct ChrfScore {
  double chrf = 0;                  // 0..100
  double precision = 0, recall = 0; // averaged over the effective orders
  int effectiveOrder = 0;
  /// `chrF2 = 59.73`.
  std::string str() const;
};

/// chrF2 (beta = 2: recall weighs 4 times precision) of the statistics.
ChrfScore chrfScore(const ChrfStats &stats);

/// Corpus chrF2 of hypotheses against references, case-sensitive unless
/// `lowercase` (ASCII letters only, as --lc of BLEU).
ChrfScore corpusChrf(const std::vector<std::string> &hyps,
                     const std::vector<std::string> &refs,
                     bool lowercase = false);

/// sacreBLEU's signature of corpusChrf:
/// `nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:cellc-VERSION`.
std::string chrfSignature(bool lowercase, const std::string &version);

} // namespace models

#endif
