//===- models/common/Embedding.cpp - Word and character embeddings --------===//

#include "models/common/Embedding.h"

#include "models/common/Data.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <unordered_map>

namespace models {

Embedding::Embedding(ParamStore &store, const std::string &name,
                     int64_t vocab, int64_t dim)
    : table(&store.add(name, {vocab, dim})) {}

void Embedding::forward(const int32_t *ids, int64_t n, float *rows) const {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocabSize())
      throw std::out_of_range(table->name + ": id " + std::to_string(ids[i]) +
                              " outside a table of " +
                              std::to_string(vocabSize()) + " rows");
  const float *values = table->value.data();
  const int64_t D = dim();
  for (int64_t i = 0; i < n; ++i)
    std::copy_n(values + int64_t(ids[i]) * D, D, rows + i * D);
}

void Embedding::backward(const int32_t *ids, int64_t n,
                         const float *dRows) const {
  if (table->frozen)
    return;
  const int64_t D = dim();
  for (int64_t i = 0; i < n; ++i) {
    float *row = table->grad.data() + int64_t(ids[i]) * D;
    for (int64_t d = 0; d < D; ++d)
      row[d] += dRows[i * D + d];
  }
}

std::string EmbeddingCoverage::describe(const std::string &path) const {
  char text[256];
  std::snprintf(text, sizeof(text),
                "%lld of %lld tokens (%.1f%%): %lld as written, %lld "
                "lower-cased; %lld vectors in ",
                (long long)(exact + lowercased), (long long)tokens,
                100.0 * fraction(), (long long)exact, (long long)lowercased,
                (long long)fileVectors);
  return text + path;
}

namespace {

std::string lowerAscii(std::string text) {
  for (char &c : text)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

/// The word and its values from one line; false for a malformed line.
bool parseVectorLine(const std::string &line, std::string &word,
                     std::vector<float> &values) {
  size_t space = line.find(' ');
  if (space == std::string::npos || space == 0)
    return false;
  word = line.substr(0, space);
  values.clear();
  const char *cursor = line.c_str() + space;
  while (true) {
    while (*cursor == ' ')
      ++cursor;
    if (*cursor == '\0' || *cursor == '\r' || *cursor == '\n')
      return true;
    char *end;
    float value = std::strtof(cursor, &end);
    if (end == cursor)
      return false;
    values.push_back(value);
    cursor = end;
  }
}

/// A word2vec text header: two integers and nothing else.
bool isWord2VecHeader(const std::string &line) {
  long long count, dim;
  char rest;
  return std::sscanf(line.c_str(), "%lld %lld %c", &count, &dim, &rest) == 2;
}

} // namespace

EmbeddingCoverage Embedding::loadPretrained(
    const std::string &path, const std::vector<std::string> &tokens,
    int32_t firstId) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(path + ": cannot open the embedding file");
  // Where each spelling should go: as written wins over lower-cased.
  std::unordered_map<std::string, std::vector<int32_t>> exactRows, lowerRows;
  for (int32_t id = firstId; id < int32_t(tokens.size()); ++id) {
    exactRows[tokens[id]].push_back(id);
    lowerRows[lowerAscii(tokens[id])].push_back(id);
  }
  EmbeddingCoverage coverage;
  coverage.tokens = int64_t(tokens.size()) - firstId;
  std::vector<int8_t> filled(tokens.size(), 0); // 0 no, 1 lower, 2 exact
  std::string line, word;
  std::vector<float> values;
  for (int64_t lineNo = 1; std::getline(in, line); ++lineNo) {
    if (line.empty() || (lineNo == 1 && isWord2VecHeader(line)))
      continue;
    if (!parseVectorLine(line, word, values))
      throw DataError(path + ":" + std::to_string(lineNo) +
                      ": expected a word and its values");
    if (int64_t(values.size()) != dim())
      throw DataError(path + ":" + std::to_string(lineNo) + ": " +
                      std::to_string(values.size()) +
                      " values, but the embedding has " +
                      std::to_string(dim()));
    ++coverage.fileVectors;
    auto copyTo = [&](const std::vector<int32_t> &ids, int8_t quality) {
      for (int32_t id : ids) {
        if (filled[id] >= quality)
          continue;
        filled[id] = quality;
        std::copy(values.begin(), values.end(),
                  table->value.begin() + int64_t(id) * dim());
      }
    };
    if (auto it = exactRows.find(word); it != exactRows.end())
      copyTo(it->second, 2);
    if (auto it = lowerRows.find(word); it != lowerRows.end())
      copyTo(it->second, 1);
  }
  for (int8_t quality : filled) {
    if (quality == 2)
      ++coverage.exact;
    else if (quality == 1)
      ++coverage.lowercased;
  }
  return coverage;
}

} // namespace models
