//===- models/common/Chrf.cpp - Corpus chrF -------------------------------===//

#include "models/common/Chrf.h"

#include "models/common/Bleu.h"
#include "models/common/Data.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace models {

namespace {

/// The line's code points without whitespace (Python's
/// ''.join(line.split())), ASCII letters lower-cased when asked.
std::u32string charactersOf(const std::string &line, bool lowercase) {
  std::u32string out;
  for (char32_t c : decodeUtf8(line)) {
    if (isPythonSpace(c))
      continue;
    if (lowercase && c >= U'A' && c <= U'Z')
      c = c - U'A' + U'a';
    out += c;
  }
  return out;
}

std::map<std::u32string, int64_t> ngramCounts(const std::u32string &text,
                                              size_t n) {
  std::map<std::u32string, int64_t> counts;
  for (size_t i = 0; i + n <= text.size(); ++i)
    ++counts[text.substr(i, n)];
  return counts;
}

void addCharacters(ChrfStats &stats, const std::u32string &hyp,
                   const std::u32string &ref) {
  for (int n = 1; n <= ChrfStats::Order; ++n) {
    auto hypCounts = ngramCounts(hyp, size_t(n));
    auto refCounts = ngramCounts(ref, size_t(n));
    for (const auto &[gram, count] : hypCounts) {
      stats.hyp[n - 1] += count;
      auto it = refCounts.find(gram);
      if (it != refCounts.end())
        stats.match[n - 1] += std::min(count, it->second);
    }
    for (const auto &[gram, count] : refCounts)
      stats.ref[n - 1] += count;
  }
}

} // namespace

void ChrfStats::add(const std::string &hypLine, const std::string &refLine) {
  addCharacters(*this, charactersOf(hypLine, false),
                charactersOf(refLine, false));
}

ChrfScore chrfScore(const ChrfStats &stats) {
  ChrfScore score;
  for (int n = 0; n < ChrfStats::Order; ++n) {
    if (stats.hyp[n] == 0 || stats.ref[n] == 0)
      continue;
    score.precision += double(stats.match[n]) / double(stats.hyp[n]);
    score.recall += double(stats.match[n]) / double(stats.ref[n]);
    ++score.effectiveOrder;
  }
  if (score.effectiveOrder == 0)
    return score;
  score.precision /= score.effectiveOrder;
  score.recall /= score.effectiveOrder;
  const double b2 = 4, p = score.precision, r = score.recall;
  if (p + r > 0)
    score.chrf = 100 * (1 + b2) * p * r / (b2 * p + r);
  return score;
}

std::string ChrfScore::str() const {
  char text[64];
  std::snprintf(text, sizeof text, "chrF2 = %.2f", chrf);
  return text;
}

ChrfScore corpusChrf(const std::vector<std::string> &hyps,
                     const std::vector<std::string> &refs, bool lowercase) {
  if (hyps.size() != refs.size())
    throw DataError("chrF: " + std::to_string(hyps.size()) +
                    " hypotheses but " + std::to_string(refs.size()) +
                    " references");
  ChrfStats stats;
  for (size_t i = 0; i < hyps.size(); ++i)
    addCharacters(stats, charactersOf(hyps[i], lowercase),
                  charactersOf(refs[i], lowercase));
  return chrfScore(stats);
}

std::string chrfSignature(bool lowercase, const std::string &version) {
  return std::string("nrefs:1|case:") + (lowercase ? "lc" : "mixed") +
         "|eff:yes|nc:6|nw:0|space:no|version:cellc-" + version;
}

} // namespace models
