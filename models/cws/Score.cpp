//===- models/cws/Score.cpp - The SIGHAN bakeoff word scores --------------===//

#include "models/cws/Score.h"

#include "models/common/Data.h"
#include "models/cws/Text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_map>
#include <utility>

namespace cws {

namespace {

double ratio(int64_t a, int64_t b) {
  return b ? double(a) / double(b) : std::numeric_limits<double>::quiet_NaN();
}

using Matches = std::vector<std::pair<size_t, size_t>>;
using Ids = std::vector<int32_t>;

/// A table of (n + 1) x (m + 1) lengths above this many cells (64 MB) is
/// replaced by Hirschberg's linear-space recursion: a 30,000-character line
/// once took 3.6 GB.
constexpr size_t kDenseCells = size_t(1) << 24;

/// The words of both lines as ids: equal words, equal ids.
std::pair<Ids, Ids> wordIds(const std::vector<std::string> &gold,
                            const std::vector<std::string> &test) {
  std::unordered_map<std::string, int32_t> ids;
  auto encode = [&](const std::vector<std::string> &words) {
    Ids out;
    for (const std::string &word : words)
      out.push_back(ids.emplace(word, int32_t(ids.size())).first->second);
    return out;
  };
  Ids a = encode(gold);
  return {a, encode(test)};
}

/// The matches of one longest common subsequence of a and b, from the full
/// table of suffix lengths (the alignment the scores always had).
Matches denseMatches(const Ids &a, const Ids &b) {
  size_t n = a.size(), m = b.size();
  std::vector<int32_t> lcs((n + 1) * (m + 1), 0);
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i * (m + 1) + j] =
          a[i] == b[j]
              ? lcs[(i + 1) * (m + 1) + j + 1] + 1
              : std::max(lcs[(i + 1) * (m + 1) + j], lcs[i * (m + 1) + j + 1]);
  Matches matches;
  for (size_t i = 0, j = 0; i < n && j < m;) {
    // Equal words can always be kept by some longest alignment.
    if (a[i] == b[j])
      matches.push_back({i++, j++});
    else if (lcs[(i + 1) * (m + 1) + j] >= lcs[i * (m + 1) + j + 1])
      ++i;
    else
      ++j;
  }
  return matches;
}

/// row[k]: the LCS length of a[lo, hi) and b[blo, blo + k) (forward), or of
/// a[lo, hi) and b[bhi - k, bhi) (backward), for k in 0..bhi - blo.
std::vector<int32_t> lcsRow(const Ids &a, size_t lo, size_t hi, const Ids &b,
                            size_t blo, size_t bhi, bool backward) {
  size_t m = bhi - blo;
  std::vector<int32_t> row(m + 1, 0), next(m + 1, 0);
  for (size_t r = 0; r < hi - lo; ++r) {
    int32_t word = a[backward ? hi - 1 - r : lo + r];
    for (size_t k = 1; k <= m; ++k) {
      int32_t other = b[backward ? bhi - k : blo + k - 1];
      next[k] = word == other ? row[k - 1] + 1 : std::max(row[k], next[k - 1]);
    }
    std::swap(row, next);
  }
  return row;
}

/// Hirschberg: the matches of an LCS of a[lo, hi) and b[blo, bhi), in
/// memory linear in the lines' lengths.
void linearMatches(const Ids &a, size_t lo, size_t hi, const Ids &b,
                   size_t blo, size_t bhi, Matches &matches) {
  if (lo == hi || blo == bhi)
    return;
  if (hi - lo == 1) {
    for (size_t j = blo; j < bhi; ++j)
      if (b[j] == a[lo]) {
        matches.push_back({lo, j});
        return;
      }
    return;
  }
  size_t mid = lo + (hi - lo) / 2, m = bhi - blo, split = 0;
  std::vector<int32_t> front = lcsRow(a, lo, mid, b, blo, bhi, false);
  std::vector<int32_t> back = lcsRow(a, mid, hi, b, blo, bhi, true);
  for (size_t k = 0, best = 0; k <= m; ++k)
    if (size_t(front[k] + back[m - k]) > best || k == 0)
      best = size_t(front[k] + back[m - k]), split = k;
  linearMatches(a, lo, mid, b, blo, blo + split, matches);
  linearMatches(a, mid, hi, b, blo + split, bhi, matches);
}

/// The matched (gold, test) word positions of a longest common
/// subsequence of the two lines.
Matches commonWords(const std::vector<std::string> &gold,
                    const std::vector<std::string> &test, size_t denseCells) {
  auto [a, b] = wordIds(gold, test);
  if ((a.size() + 1) * (b.size() + 1) <= denseCells)
    return denseMatches(a, b);
  Matches matches;
  linearMatches(a, 0, a.size(), b, 0, b.size(), matches);
  return matches;
}

void addGap(ScoreCounts &counts, int64_t goldGap, int64_t testGap) {
  int64_t paired = std::min(goldGap, testGap);
  counts.substitutions += paired;
  counts.deletions += goldGap - paired;
  counts.insertions += testGap - paired;
}

/// The gold line's words with the spaces removed.
std::string lineText(const std::string &line) {
  std::string text;
  for (const std::string &word : splitWords(line))
    text += word;
  return text;
}

size_t withoutTrailingBlanks(const std::vector<std::string> &lines) {
  size_t n = lines.size();
  while (n > 0 && splitWords(lines[n - 1]).empty())
    --n;
  return n;
}

} // namespace

double ScoreCounts::recall() const { return ratio(correct, goldWords); }
double ScoreCounts::precision() const { return ratio(correct, testWords); }
double ScoreCounts::f1() const {
  double p = precision(), r = recall();
  return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
}
double ScoreCounts::oovRate() const { return ratio(oov, goldWords); }
double ScoreCounts::oovRecall() const { return ratio(oovRecalled, oov); }
double ScoreCounts::ivRecall() const {
  return ratio(ivRecalled, goldWords - oov);
}

void ScoreCounts::add(const ScoreCounts &o) {
  goldWords += o.goldWords;
  testWords += o.testWords;
  correct += o.correct;
  insertions += o.insertions;
  deletions += o.deletions;
  substitutions += o.substitutions;
  oov += o.oov;
  oovRecalled += o.oovRecalled;
  ivRecalled += o.ivRecalled;
}

ScoreCounts scoreLine(const std::vector<std::string> &gold,
                      const std::vector<std::string> &test,
                      const WordSet &vocabulary, size_t denseCells) {
  ScoreCounts counts;
  counts.goldWords = int64_t(gold.size());
  counts.testWords = int64_t(test.size());
  for (const std::string &word : gold)
    counts.oov += !vocabulary.count(word);
  size_t i = 0, j = 0;
  for (auto [gi, tj] : commonWords(gold, test, denseCells)) {
    addGap(counts, int64_t(gi - i), int64_t(tj - j));
    ++counts.correct;
    (vocabulary.count(gold[gi]) ? counts.ivRecalled : counts.oovRecalled) += 1;
    i = gi + 1, j = tj + 1;
  }
  addGap(counts, int64_t(gold.size() - i), int64_t(test.size() - j));
  return counts;
}

ScoreCounts scoreLine(const std::vector<std::string> &gold,
                      const std::vector<std::string> &test,
                      const WordSet &vocabulary) {
  return scoreLine(gold, test, vocabulary, kDenseCells);
}

ScoreCounts scoreLines(const std::vector<std::string> &gold,
                       const std::vector<std::string> &test,
                       const WordSet &vocabulary, const std::string &goldName,
                       const std::string &testName) {
  size_t n = withoutTrailingBlanks(gold), m = withoutTrailingBlanks(test);
  if (n != m)
    throw models::DataError(
        "different line counts: " + goldName + " has " + std::to_string(n) +
        " lines, " + testName + " has " + std::to_string(m) +
        " (not counting blank lines at the end)");
  ScoreCounts total;
  for (size_t k = 0; k < n; ++k) {
    if (lineText(gold[k]) != lineText(test[k]))
      throw models::DataError(testName + ":" + std::to_string(k + 1) +
                              ": the characters differ from " + goldName +
                              ":" + std::to_string(k + 1) +
                              " (misaligned files?)");
    std::vector<std::string> goldWords = splitWords(gold[k]);
    if (!goldWords.empty())
      total.add(scoreLine(goldWords, splitWords(test[k]), vocabulary));
  }
  return total;
}

std::string formatScore(const ScoreCounts &c, int digits) {
  auto fixed = [digits](double x) {
    if (std::isnan(x))
      return std::string("--");
    char text[32];
    std::snprintf(text, sizeof text, "%.*f", digits, x);
    return std::string(text);
  };
  std::string text;
  auto line = [&](const char *name, const std::string &value) {
    text += std::string("=== ") + name + ":\t" + value + "\n";
  };
  line("TOTAL INSERTIONS", std::to_string(c.insertions));
  line("TOTAL DELETIONS", std::to_string(c.deletions));
  line("TOTAL SUBSTITUTIONS", std::to_string(c.substitutions));
  line("TOTAL NCHANGE",
       std::to_string(c.insertions + c.deletions + c.substitutions));
  line("TOTAL TRUE WORD COUNT", std::to_string(c.goldWords));
  line("TOTAL TEST WORD COUNT", std::to_string(c.testWords));
  line("TOTAL TRUE WORDS RECALL", fixed(c.recall()));
  line("TOTAL TEST WORDS PRECISION", fixed(c.precision()));
  line("F MEASURE", fixed(c.f1()));
  line("OOV Rate", fixed(c.oovRate()));
  line("OOV Recall Rate", fixed(c.oovRecall()));
  line("IV Recall Rate", fixed(c.ivRecall()));
  return text;
}

} // namespace cws
