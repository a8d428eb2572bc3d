//===- models/cws/Lexicon.cpp - Word-list features per character ----------===//

#include "models/cws/Lexicon.h"

#include "models/cws/Text.h"

#include <algorithm>

namespace cws {

Lexicon::Lexicon(const std::vector<std::string> &words) {
  for (const std::string &word : words) {
    std::vector<std::string> chars = splitChars(word);
    if (chars.size() < 2 || int64_t(chars.size()) > MaxLength)
      continue;
    std::string normalised;
    for (const std::string &ch : chars)
      normalised += normalizeChar(ch);
    if (set.insert(normalised).second)
      list.push_back(normalised);
  }
  std::sort(list.begin(), list.end());
}

std::vector<float> Lexicon::features(const std::vector<std::string> &chars) const {
  int64_t n = int64_t(chars.size());
  std::vector<float> out(n * Width, 0.f);
  for (int64_t start = 0; start < n; ++start) {
    std::string word = chars[start];
    for (int64_t length = 2; length <= MaxLength && start + length <= n;
         ++length) {
      word += chars[start + length - 1];
      if (!set.count(word))
        continue;
      int64_t end = start + length - 1, k = length - 2;
      out[end * Width + k] = 1.f;
      out[start * Width + (MaxLength - 1) + k] = 1.f;
    }
  }
  return out;
}

} // namespace cws
