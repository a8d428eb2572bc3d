//===- models/common/Bleu.cpp - Corpus BLEU-4 ----------------------------===//

#include "models/common/Bleu.h"

#include "models/common/Data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace models {

std::u32string decodeUtf8(const std::string &text) {
  std::u32string out;
  const auto *s = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    int extra = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : 3;
    if (extra && i + extra >= n) {
      out.push_back(0xFFFD);
      break;
    }
    char32_t cp = extra ? (c & (0x3F >> extra)) : c;
    for (int k = 1; k <= extra; ++k)
      cp = (cp << 6) | (s[i + k] & 0x3F);
    out.push_back(cp);
    i += extra + 1;
  }
  return out;
}

bool isPythonSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 ||
         c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

namespace {

std::string encodeUtf8(const std::u32string &text) {
  std::string out;
  for (char32_t cp : text) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

void replaceAll(std::string &text, const std::string &from,
                const std::string &to) {
  size_t pos = 0;
  while ((pos = text.find(from, pos)) != std::string::npos) {
    text.replace(pos, from.size(), to);
    pos += to.size();
  }
}

bool isDigit(char32_t c) { return c >= U'0' && c <= U'9'; }

/// [\{-\~\[-\` -\&\(-\+\:-\@\/]
bool isRule1(char32_t c) {
  return (c >= U'{' && c <= U'~') || (c >= U'[' && c <= U'`') ||
         (c >= U' ' && c <= U'&') || (c >= U'(' && c <= U'+') ||
         (c >= U':' && c <= U'@') || c == U'/';
}

/// re.sub of a two-character pattern `(first)(second)` with the replacement
/// pieces before, between and after the two groups: scans left to right,
/// never overlapping, like Python.
template <typename F1, typename F2>
std::u32string subPair(const std::u32string &s, F1 first, F2 second,
                       const std::u32string &before,
                       const std::u32string &between,
                       const std::u32string &after) {
  std::u32string out;
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      out += before;
      out += s[i];
      out += between;
      out += s[i + 1];
      out += after;
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::vector<std::vector<std::string>>
tokensOf(const std::vector<std::string> &lines, bool tokenize,
         bool lowercase) {
  std::vector<std::vector<std::string>> out;
  for (std::string line : lines) {
    if (lowercase)
      std::transform(line.begin(), line.end(), line.begin(), [](char c) {
        return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
      });
    out.push_back(splitWhitespace(tokenize ? tokenize13a(line) : line));
  }
  return out;
}

} // namespace

std::string tokenize13a(const std::string &input) {
  std::string line = input;
  replaceAll(line, "<skipped>", "");
  replaceAll(line, "-\n", "");
  replaceAll(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    replaceAll(line, "&quot;", "\"");
    replaceAll(line, "&amp;", "&");
    replaceAll(line, "&lt;", "<");
    replaceAll(line, "&gt;", ">");
  }
  std::u32string s = decodeUtf8(" " + line + " ");
  // ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> ' \1 '
  std::u32string r1;
  for (char32_t c : s) {
    if (isRule1(c)) {
      r1 += U' ';
      r1 += c;
      r1 += U' ';
    } else {
      r1 += c;
    }
  }
  auto notDigit = [](char32_t c) { return !isDigit(c); };
  auto periodComma = [](char32_t c) { return c == U'.' || c == U','; };
  auto digit = [](char32_t c) { return isDigit(c); };
  auto dash = [](char32_t c) { return c == U'-'; };
  // ([^0-9])([\.,]) -> '\1 \2 '
  std::u32string r2 = subPair(r1, notDigit, periodComma, U"", U" ", U" ");
  // ([\.,])([^0-9]) -> ' \1 \2'
  std::u32string r3 = subPair(r2, periodComma, notDigit, U" ", U" ", U"");
  // ([0-9])(-) -> '\1 \2 '
  std::u32string r4 = subPair(r3, digit, dash, U"", U" ", U" ");
  // ' '.join(line.split())
  std::u32string out;
  size_t i = 0;
  while (i < r4.size()) {
    while (i < r4.size() && isPythonSpace(r4[i]))
      ++i;
    size_t start = i;
    while (i < r4.size() && !isPythonSpace(r4[i]))
      ++i;
    if (i > start) {
      if (!out.empty())
        out += U' ';
      out.append(r4, start, i - start);
    }
  }
  return encodeUtf8(out);
}

void BleuStats::add(const std::vector<std::string> &hyp,
                    const std::vector<std::string> &ref) {
  hypLength += int64_t(hyp.size());
  refLength += int64_t(ref.size());
  for (int n = 1; n <= 4; ++n) {
    std::map<std::vector<std::string>, int64_t> refCounts;
    for (size_t i = 0; i + n <= ref.size(); ++i)
      ++refCounts[std::vector<std::string>(ref.begin() + i,
                                           ref.begin() + i + n)];
    std::map<std::vector<std::string>, int64_t> hypCounts;
    for (size_t i = 0; i + n <= hyp.size(); ++i)
      ++hypCounts[std::vector<std::string>(hyp.begin() + i,
                                           hyp.begin() + i + n)];
    for (const auto &[gram, count] : hypCounts) {
      auto it = refCounts.find(gram);
      if (it != refCounts.end())
        correct[n - 1] += std::min(count, it->second);
      total[n - 1] += count;
    }
  }
}

static void finishScore(const BleuStats &stats, BleuScore &score,
                        double logSum) {
  score.hypLength = stats.hypLength;
  score.refLength = stats.refLength;
  score.ratio = stats.refLength ? double(stats.hypLength) / stats.refLength : 0;
  if (stats.hypLength == 0)
    score.brevityPenalty = 0;
  else if (stats.hypLength < stats.refLength)
    score.brevityPenalty = std::exp(1 - double(stats.refLength) / stats.hypLength);
  else
    score.brevityPenalty = 1;
  score.bleu = score.brevityPenalty * std::exp(logSum / 4);
}

static double myLog(double x) { return x == 0 ? -9999999999.0 : std::log(x); }

BleuScore sacreBleuScore(const BleuStats &stats) {
  BleuScore score;
  double smooth = 1;
  for (int n = 0; n < 4; ++n) {
    if (stats.total[n] == 0)
      break;
    if (stats.correct[n] == 0) {
      smooth *= 2;
      score.precisions[n] = 100. / (smooth * stats.total[n]);
    } else {
      score.precisions[n] = 100. * stats.correct[n] / stats.total[n];
    }
  }
  double logSum = 0;
  for (int n = 0; n < 4; ++n)
    logSum += myLog(score.precisions[n]);
  finishScore(stats, score, logSum);
  return score;
}

BleuScore multiBleuScore(const BleuStats &stats) {
  BleuScore score;
  double logSum = 0;
  for (int n = 0; n < 4; ++n) {
    double p = stats.total[n] ? double(stats.correct[n]) / stats.total[n] : 0;
    score.precisions[n] = 100 * p;
    logSum += myLog(p);
  }
  finishScore(stats, score, logSum);
  score.bleu *= 100;
  return score;
}

std::string BleuScore::str() const {
  char text[256];
  std::snprintf(text, sizeof text,
                "BLEU = %.2f %.1f/%.1f/%.1f/%.1f (BP = %.3f ratio = %.3f "
                "hyp_len = %lld ref_len = %lld)",
                bleu, precisions[0], precisions[1], precisions[2],
                precisions[3], brevityPenalty, ratio, (long long)hypLength,
                (long long)refLength);
  return text;
}

static BleuScore corpus(const std::vector<std::string> &hyps,
                        const std::vector<std::string> &refs, bool tokenize,
                        bool lowercase, bool sacre) {
  if (hyps.size() != refs.size())
    throw DataError("BLEU: " + std::to_string(hyps.size()) +
                    " hypotheses but " + std::to_string(refs.size()) +
                    " references");
  auto h = tokensOf(hyps, tokenize, lowercase);
  auto r = tokensOf(refs, tokenize, lowercase);
  BleuStats stats;
  for (size_t i = 0; i < h.size(); ++i)
    stats.add(h[i], r[i]);
  return sacre ? sacreBleuScore(stats) : multiBleuScore(stats);
}

BleuScore corpusSacreBleu(const std::vector<std::string> &hyps,
                          const std::vector<std::string> &refs,
                          bool lowercase) {
  return corpus(hyps, refs, true, lowercase, true);
}

BleuScore corpusMultiBleu(const std::vector<std::string> &hyps,
                          const std::vector<std::string> &refs,
                          bool lowercase) {
  return corpus(hyps, refs, false, lowercase, false);
}

std::string bleuSignature(bool tokenize13a, bool lowercase,
                          const std::string &version) {
  return std::string("nrefs:1|case:") + (lowercase ? "lc" : "mixed") +
         "|eff:no|tok:" +
         (tokenize13a ? "13a|smooth:exp" : "none|smooth:none") +
         "|version:cellc-" + version;
}

} // namespace models
