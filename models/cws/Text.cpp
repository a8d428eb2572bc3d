//===- models/cws/Text.cpp - Characters and their model form --------------===//

#include "models/cws/Text.h"

#include <cstdint>

namespace cws {

namespace {

/// The length of the UTF-8 sequence that starts with `lead`.
size_t sequenceLength(unsigned char lead) {
  if (lead < 0x80)
    return 1;
  if ((lead & 0xE0) == 0xC0)
    return 2;
  if ((lead & 0xF0) == 0xE0)
    return 3;
  return 4;
}

uint32_t codePoint(const std::string &ch) {
  const auto *s = reinterpret_cast<const unsigned char *>(ch.data());
  size_t n = ch.size();
  if (n == 1)
    return s[0];
  uint32_t cp = s[0] & (0x7F >> n);
  for (size_t k = 1; k < n; ++k)
    cp = (cp << 6) | (s[k] & 0x3F);
  return cp;
}

} // namespace

std::vector<std::string> splitChars(const std::string &text) {
  std::vector<std::string> chars;
  for (size_t i = 0; i < text.size();) {
    size_t n = sequenceLength(static_cast<unsigned char>(text[i]));
    chars.push_back(text.substr(i, n));
    i += n;
  }
  return chars;
}

bool isSpace(const std::string &ch) {
  return ch == " " || ch == "\t" || ch == "\r" || ch == "\n" || ch == "\f" ||
         ch == "\v" || ch == "\xE3\x80\x80";
}

std::vector<std::string> splitWords(const std::string &line) {
  std::vector<std::string> words;
  std::string word;
  for (const std::string &ch : splitChars(line)) {
    if (!isSpace(ch)) {
      word += ch;
      continue;
    }
    if (!word.empty())
      words.push_back(std::move(word));
    word.clear();
  }
  if (!word.empty())
    words.push_back(std::move(word));
  return words;
}

std::string normalizeChar(const std::string &ch) {
  uint32_t cp = codePoint(ch);
  // U+FF01..U+FF5E are U+0021..U+007E shifted by 0xFEE0.
  if (cp >= 0xFF01 && cp <= 0xFF5E)
    cp -= 0xFEE0;
  if (cp >= '0' && cp <= '9')
    return "0";
  if (cp < 0x80)
    return std::string(1, char(cp));
  return ch;
}

} // namespace cws
