//===- models/cws/Score.cpp - The SIGHAN bakeoff word scores --------------===//

#include "models/cws/Score.h"

#include "models/common/Data.h"
#include "models/cws/Text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace cws {

namespace {

double ratio(int64_t a, int64_t b) {
  return b ? double(a) / double(b) : std::numeric_limits<double>::quiet_NaN();
}

/// lcs[i * (m + 1) + j]: the longest common subsequence of gold[i..] and
/// test[j..].
std::vector<int32_t> suffixLcs(const std::vector<std::string> &gold,
                               const std::vector<std::string> &test) {
  size_t n = gold.size(), m = test.size();
  std::vector<int32_t> lcs((n + 1) * (m + 1), 0);
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i * (m + 1) + j] =
          gold[i] == test[j]
              ? lcs[(i + 1) * (m + 1) + j + 1] + 1
              : std::max(lcs[(i + 1) * (m + 1) + j], lcs[i * (m + 1) + j + 1]);
  return lcs;
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
                      const WordSet &vocabulary) {
  ScoreCounts counts;
  counts.goldWords = int64_t(gold.size());
  counts.testWords = int64_t(test.size());
  std::vector<int32_t> lcs = suffixLcs(gold, test);
  size_t m = test.size(), i = 0, j = 0;
  int64_t goldGap = 0, testGap = 0;
  while (i < gold.size() || j < m) {
    bool known = i < gold.size() && vocabulary.count(gold[i]);
    if (i < gold.size() && j < m && gold[i] == test[j]) {
      // Equal words can always be kept by some longest alignment.
      addGap(counts, goldGap, testGap);
      goldGap = testGap = 0;
      ++counts.correct;
      (known ? counts.ivRecalled : counts.oovRecalled) += 1;
      counts.oov += !known;
      ++i, ++j;
    } else if (j == m ||
               (i < gold.size() &&
                lcs[(i + 1) * (m + 1) + j] >= lcs[i * (m + 1) + j + 1])) {
      counts.oov += !known;
      ++goldGap, ++i;
    } else {
      ++testGap, ++j;
    }
  }
  addGap(counts, goldGap, testGap);
  return counts;
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
