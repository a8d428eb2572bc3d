//===- models/cws/Baseline.cpp - Forward maximum matching -----------------===//

#include "models/cws/Baseline.h"

#include "models/cws/Text.h"

#include <algorithm>

namespace cws {

MaxMatch::MaxMatch(const std::vector<std::string> &words)
    : dictionary(words.begin(), words.end()) {
  for (const std::string &word : dictionary)
    longest = std::max(longest, splitChars(word).size());
}

std::vector<std::string> MaxMatch::segment(const Sentence &sentence) const {
  const std::vector<std::string> &chars = sentence.chars;
  auto boundary = [&](size_t i) {
    return i < sentence.spaceBefore.size() && sentence.spaceBefore[i];
  };
  std::vector<std::string> words;
  for (size_t start = 0; start < chars.size();) {
    // The candidates: chars[start, end) within the limit and no space.
    size_t limit = start + 1;
    while (limit < chars.size() && limit - start < longest && !boundary(limit))
      ++limit;
    std::string candidate;
    for (size_t i = start; i < limit; ++i)
      candidate += chars[i];
    size_t end = limit;
    while (end > start + 1 && !dictionary.count(candidate)) {
      --end;
      candidate.resize(candidate.size() - chars[end].size());
    }
    words.push_back(std::move(candidate));
    start = end;
  }
  return words;
}

} // namespace cws
