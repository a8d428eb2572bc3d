//===- models/nli/Corpus.cpp - Sentence pairs with inference labels -------===//

#include "models/nli/Corpus.h"

#include <cctype>
#include <fstream>

namespace nli {
using models::DataError;

namespace {

bool exists(const std::string &path) { return bool(std::ifstream(path)); }

std::string where(const std::string &path, size_t line) {
  return path + ":" + std::to_string(line + 1);
}

/// The tab-separated fields of a line (a trailing CR dropped).
std::vector<std::string> splitTabs(std::string line) {
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t tab; (tab = line.find('\t', start)) != std::string::npos;
       start = tab + 1)
    fields.push_back(line.substr(start, tab - start));
  fields.push_back(line.substr(start));
  return fields;
}

Pair makePair(const std::string &premise, const std::string &hypothesis,
              bool lower, const std::string &at) {
  Pair pair;
  pair.premise = tokenize(premise, lower);
  pair.hypothesis = tokenize(hypothesis, lower);
  if (pair.premise.empty() || pair.hypothesis.empty())
    throw DataError(at + ": empty " +
                    (pair.premise.empty() ? "premise" : "hypothesis"));
  return pair;
}

std::vector<Pair> readTsv(const std::string &path, bool lower,
                          bool labelled) {
  std::vector<std::string> lines = models::readLines(path);
  std::vector<Pair> pairs;
  size_t columns = labelled ? 3 : 2;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> fields = splitTabs(lines[i]);
    if (fields.size() != columns)
      throw DataError(where(path, i) + ": " + std::to_string(fields.size()) +
                      " tab-separated columns, expected " +
                      std::to_string(columns) +
                      (labelled ? " (premise, hypothesis, label)"
                                : " (premise, hypothesis)"));
    Pair pair = makePair(fields[0], fields[1], lower, where(path, i));
    if (labelled && (pair.label = parseLabel(fields[2])) < 0)
      throw DataError(where(path, i) + ": unknown label '" + fields[2] + "'");
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

std::vector<Pair> readSnli(const std::string &dir, const std::string &name,
                           bool lower) {
  std::string s1 = dir + "/s1." + name, s2 = dir + "/s2." + name,
              labelsPath = dir + "/labels." + name;
  std::vector<std::string> premises = models::readLines(s1),
                           hypotheses = models::readLines(s2),
                           labels = models::readLines(labelsPath);
  if (premises.size() != hypotheses.size() || premises.size() != labels.size())
    throw DataError(dir + "/{s1,s2,labels}." + name + ": " +
                    std::to_string(premises.size()) + ", " +
                    std::to_string(hypotheses.size()) + " and " +
                    std::to_string(labels.size()) +
                    " lines; they must be aligned");
  std::vector<Pair> pairs;
  for (size_t i = 0; i < premises.size(); ++i) {
    Pair pair = makePair(premises[i], hypotheses[i], lower, where(s1, i));
    std::string label = splitTabs(labels[i])[0];
    if ((pair.label = parseLabel(label)) < 0)
      throw DataError(where(labelsPath, i) + ": unknown label '" + label +
                      "'");
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

} // namespace

int32_t parseLabel(const std::string &text) {
  for (int32_t id = 0; id < int32_t(kLabelNames.size()); ++id)
    if (text == kLabelNames[id] || text == std::to_string(id))
      return id;
  return -1;
}

std::vector<std::string> tokenize(const std::string &sentence, bool lower) {
  std::vector<std::string> tokens;
  std::string word;
  auto flush = [&] {
    if (!word.empty())
      tokens.push_back(word);
    word.clear();
  };
  for (char c : sentence) {
    auto byte = static_cast<unsigned char>(c);
    if (std::isspace(byte)) {
      flush();
    } else if (byte < 128 && std::ispunct(byte) && c != '\'' && c != '-') {
      flush();
      tokens.push_back(std::string(1, c));
    } else {
      word += lower && byte < 128 ? char(std::tolower(byte)) : c;
    }
  }
  flush();
  return tokens;
}

std::vector<Pair> readSplit(const std::string &split, bool lower) {
  if (exists(split + ".tsv"))
    return readTsv(split + ".tsv", lower, true);
  size_t slash = split.rfind('/');
  std::string dir = slash == std::string::npos ? "." : split.substr(0, slash);
  std::string name = split.substr(slash == std::string::npos ? 0 : slash + 1);
  if (exists(dir + "/s1." + name))
    return readSnli(dir, name, lower);
  throw DataError(split + ": no such split (looked for " + split +
                  ".tsv and " + dir + "/s1." + name + ")");
}

std::vector<Pair> readUnlabelled(const std::string &path, bool lower) {
  return readTsv(path, lower, false);
}

} // namespace nli
