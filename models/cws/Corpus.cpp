//===- models/cws/Corpus.cpp - Segmented and raw Chinese text -------------===//

#include "models/cws/Corpus.h"

#include "models/common/Data.h"
#include "models/cws/Text.h"

namespace cws {

using models::DataError;

Sentence tagWords(const std::vector<std::string> &words) {
  Sentence sentence;
  for (const std::string &word : words) {
    std::vector<std::string> chars = splitChars(word);
    for (size_t i = 0; i < chars.size(); ++i) {
      bool first = i == 0, last = i + 1 == chars.size();
      sentence.tags.push_back(first && last ? S : first ? B : last ? E : M);
      sentence.chars.push_back(std::move(chars[i]));
    }
  }
  return sentence;
}

std::vector<std::string> wordsFromTags(const std::vector<std::string> &chars,
                                       const std::vector<int32_t> &tags) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i < chars.size(); ++i) {
    word += chars[i];
    bool ends = tags[i] == E || tags[i] == S || i + 1 == chars.size() ||
                tags[i + 1] == B || tags[i + 1] == S;
    if (ends) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  return words;
}

std::string joinWords(const std::vector<std::string> &words) {
  return models::joinTokens(words, "  ");
}

Format parseFormat(const std::string &name) {
  if (name == "auto")
    return Format::Auto;
  if (name == "segmented")
    return Format::Segmented;
  if (name == "conllu")
    return Format::Conllu;
  if (name == "raw")
    return Format::Raw;
  throw DataError("unknown format '" + name +
                  "' (auto, segmented, conllu or raw)");
}

Format resolveFormat(Format format, const std::string &path,
                     Format otherwise) {
  if (format != Format::Auto)
    return format;
  auto endsWith = [&](const std::string &suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) ==
               0;
  };
  return endsWith(".conll") || endsWith(".conllu") ? Format::Conllu
                                                   : otherwise;
}

namespace {

std::string where(const std::string &path, size_t index) {
  return path + ":" + std::to_string(index + 1);
}

/// True when lines[from..] are all empty: blank lines may end a file.
bool onlyBlankFrom(const std::vector<std::string> &lines, size_t from) {
  for (size_t i = from; i < lines.size(); ++i)
    if (!lines[i].empty())
      return false;
  return true;
}

std::vector<std::string> splitTabs(const std::string &line) {
  std::vector<std::string> columns(1);
  for (char c : line) {
    if (c == '\t')
      columns.emplace_back();
    else
      columns.back() += c;
  }
  return columns;
}

std::vector<std::vector<std::string>>
readSegmentedWords(const std::string &path) {
  std::vector<std::string> lines = models::readLines(path);
  std::vector<std::vector<std::string>> sentences;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> words = splitWords(lines[i]);
    if (!words.empty()) {
      sentences.push_back(std::move(words));
      continue;
    }
    if (onlyBlankFrom(lines, i))
      break;
    throw DataError(where(path, i) +
                    ": empty line (a segmented corpus has one sentence of "
                    "words per line)");
  }
  return sentences;
}

/// The word of a CoNLL-U word line, "" for a line to skip.
std::string conlluWord(const std::string &line, const std::string &at) {
  std::vector<std::string> columns = splitTabs(line);
  if (columns.size() != 10)
    throw DataError(at + ": " + std::to_string(columns.size()) +
                    " tab-separated columns, CoNLL-U has 10");
  // Multi-word token ranges and empty nodes are not words of the text.
  if (columns[0].find_first_of("-.") != std::string::npos)
    return "";
  bool blank = columns[1].empty();
  for (const std::string &ch : splitChars(columns[1]))
    blank = blank || isSpace(ch);
  if (blank)
    throw DataError(at + ": the word (column 2) '" + columns[1] +
                    "' is empty or holds white space");
  return columns[1];
}

std::vector<std::vector<std::string>> readConlluWords(const std::string &path) {
  std::vector<std::string> lines = models::readLines(path);
  std::vector<std::vector<std::string>> sentences;
  std::vector<std::string> words;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string &line = lines[i];
    if (line.empty()) {
      if (!words.empty()) {
        sentences.push_back(std::move(words));
        words.clear();
        continue;
      }
      if (onlyBlankFrom(lines, i))
        break;
      throw DataError(where(path, i) +
                      ": blank line without a sentence before it (CoNLL-U "
                      "puts one blank line after each sentence)");
    }
    if (line[0] == '#')
      continue;
    std::string word = conlluWord(line, where(path, i));
    if (!word.empty())
      words.push_back(std::move(word));
  }
  // A missing blank line after the last sentence is forgiven.
  if (!words.empty())
    sentences.push_back(std::move(words));
  return sentences;
}

std::vector<std::vector<std::string>> readWordSentences(const std::string &path,
                                                        Format format) {
  if (resolveFormat(format, path, Format::Segmented) == Format::Conllu)
    return readConlluWords(path);
  return readSegmentedWords(path);
}

/// A raw line: its characters without white space, which is remembered as
/// a boundary before the next character.
Sentence rawSentence(const std::string &line) {
  Sentence sentence;
  bool space = false;
  for (std::string &ch : splitChars(line)) {
    if (isSpace(ch)) {
      space = true;
      continue;
    }
    sentence.chars.push_back(std::move(ch));
    sentence.spaceBefore.push_back(space);
    space = false;
  }
  return sentence;
}

} // namespace

std::vector<Sentence> readGold(const std::string &path, Format format) {
  if (format == Format::Raw)
    throw DataError(path + ": raw text has no segmentation to learn from");
  std::vector<Sentence> sentences;
  for (const auto &words : readWordSentences(path, format))
    sentences.push_back(tagWords(words));
  return sentences;
}

std::vector<Sentence> readToSegment(const std::string &path, Format format) {
  if (resolveFormat(format, path, Format::Raw) == Format::Raw) {
    std::vector<Sentence> sentences;
    for (const std::string &line : models::readInputLines(path))
      sentences.push_back(rawSentence(line));
    return sentences;
  }
  std::vector<Sentence> sentences = readGold(path, format);
  for (Sentence &sentence : sentences) {
    sentence.tags.clear();
    sentence.spaceBefore.assign(sentence.chars.size(), 0);
  }
  return sentences;
}

std::vector<std::string> readWords(const std::string &path, Format format) {
  std::vector<std::string> words;
  if (resolveFormat(format, path, Format::Segmented) == Format::Conllu) {
    for (auto &sentence : readConlluWords(path))
      words.insert(words.end(), sentence.begin(), sentence.end());
    return words;
  }
  // A word list may have blank lines: they add no word.
  for (const std::string &line : models::readLines(path))
    for (std::string &word : splitWords(line))
      words.push_back(std::move(word));
  return words;
}

} // namespace cws
