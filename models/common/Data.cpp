//===- models/common/Data.cpp - Corpora, vocabularies, batches -----------===//

#include "models/common/Data.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace models {

int64_t findInvalidUtf8(const std::string &text) {
  const auto *s = reinterpret_cast<const unsigned char *>(text.data());
  size_t n = text.size(), i = 0;
  while (i < n) {
    unsigned char c = s[i];
    size_t extra;
    uint32_t min;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, min = 0x10000;
    } else {
      return int64_t(i);
    }
    if (i + extra >= n)
      return int64_t(i);
    uint32_t cp = c & (0x3F >> extra);
    for (size_t k = 1; k <= extra; ++k) {
      if ((s[i + k] & 0xC0) != 0x80)
        return int64_t(i);
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return int64_t(i);
    i += extra + 1;
  }
  return -1;
}

std::vector<std::string> readLines(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(path + ": cannot open file");
  std::vector<std::string> lines;
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    int64_t bad = findInvalidUtf8(line);
    if (bad >= 0)
      throw DataError(path + ":" + std::to_string(number) +
                      ": invalid UTF-8 at byte " + std::to_string(bad + 1));
    lines.push_back(std::move(line));
  }
  if (lines.empty())
    throw DataError(path + ": empty file");
  return lines;
}

std::vector<std::string> readInputLines(const std::string &path) {
  if (!path.empty() && path != "-")
    return readLines(path);
  std::vector<std::string> lines;
  std::string line;
  int64_t number = 0;
  while (std::getline(std::cin, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (findInvalidUtf8(line) >= 0)
      throw DataError("<stdin>:" + std::to_string(number) + ": invalid UTF-8");
    lines.push_back(line);
  }
  return lines;
}

void writeOutputLines(const std::string &path,
                      const std::vector<std::string> &lines) {
  std::ofstream file;
  if (!path.empty()) {
    file.open(path);
    if (!file)
      throw DataError(path + ": cannot write");
  }
  std::ostream &os = path.empty() ? std::cout : file;
  for (const std::string &line : lines)
    os << line << "\n";
  os.flush();
  if (!os)
    throw DataError((path.empty() ? "<stdout>" : path) + ": write failed");
}

void readParallel(const std::string &srcPath, const std::string &tgtPath,
                  std::vector<std::string> &src,
                  std::vector<std::string> &tgt) {
  src = readLines(srcPath);
  tgt = readLines(tgtPath);
  if (src.size() != tgt.size())
    throw DataError("different line counts: " + srcPath + " has " +
                    std::to_string(src.size()) + " lines, " + tgtPath +
                    " has " + std::to_string(tgt.size()) +
                    " lines (first unpaired line: " +
                    std::to_string(std::min(src.size(), tgt.size()) + 1) +
                    ")");
}

std::vector<std::string> splitWhitespace(const std::string &line) {
  std::vector<std::string> words;
  std::istringstream stream(line);
  std::string word;
  while (stream >> word)
    words.push_back(word);
  return words;
}

std::string joinTokens(const std::vector<std::string> &tokens,
                       const std::string &sep) {
  std::string text;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i)
      text += sep;
    text += tokens[i];
  }
  return text;
}

Vocab::Vocab() : tokens({"<pad>", "<unk>", "<s>", "</s>"}) {
  for (size_t i = 0; i < tokens.size(); ++i)
    index[tokens[i]] = int32_t(i);
}

Vocab Vocab::build(const std::vector<std::vector<std::string>> &sentences,
                   int64_t maxSize, int64_t minCount) {
  std::map<std::string, int64_t> counts;
  for (const auto &sentence : sentences)
    for (const auto &word : sentence)
      ++counts[word];
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(),
                                                      counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto &a, const auto &b) {
                     return a.second > b.second;
                   });
  Vocab vocab;
  for (const auto &[word, count] : sorted) {
    if (count < minCount || (maxSize > 0 && vocab.size() >= maxSize))
      break;
    if (vocab.index.count(word))
      continue;
    vocab.index[word] = int32_t(vocab.tokens.size());
    vocab.tokens.push_back(word);
  }
  return vocab;
}

Vocab Vocab::fromTokens(const std::vector<std::string> &tokens) {
  Vocab vocab;
  vocab.tokens = tokens;
  vocab.index.clear();
  for (size_t i = 0; i < tokens.size(); ++i)
    vocab.index[tokens[i]] = int32_t(i);
  return vocab;
}

int32_t Vocab::id(const std::string &token) const {
  auto it = index.find(token);
  return it == index.end() ? Unk : it->second;
}

std::vector<int32_t> Vocab::encode(const std::vector<std::string> &words) const {
  std::vector<int32_t> ids;
  ids.reserve(words.size());
  for (const auto &word : words)
    ids.push_back(id(word));
  return ids;
}

std::vector<std::string> Vocab::decode(const std::vector<int32_t> &ids) const {
  std::vector<std::string> words;
  for (int32_t id : ids) {
    if (id == Eos)
      break;
    if (id == Bos || id == Pad)
      continue;
    words.push_back(tokens[id]);
  }
  return words;
}

//===--- Batches ----------------------------------------------------------===//

Batch makeBatch(const std::vector<Example> &examples,
                const std::vector<int64_t> &indices) {
  Batch batch;
  batch.B = int64_t(indices.size());
  batch.indices = indices;
  for (int64_t i : indices) {
    batch.Tx = std::max<int64_t>(batch.Tx, examples[i].src.size() + 1);
    batch.Ty = std::max<int64_t>(batch.Ty, examples[i].tgt.size() + 1);
  }
  batch.src.assign(batch.Tx * batch.B, Vocab::Pad);
  batch.tgtIn.assign(batch.Ty * batch.B, Vocab::Pad);
  batch.tgtOut.assign(batch.Ty * batch.B, Vocab::Pad);
  for (int64_t b = 0; b < batch.B; ++b) {
    const Example &ex = examples[indices[b]];
    int64_t sl = int64_t(ex.src.size()) + 1, tl = int64_t(ex.tgt.size()) + 1;
    for (int64_t t = 0; t + 1 < sl; ++t)
      batch.src[t * batch.B + b] = ex.src[t];
    batch.src[(sl - 1) * batch.B + b] = Vocab::Eos;
    batch.tgtIn[b] = Vocab::Bos;
    for (int64_t t = 0; t + 1 < tl; ++t) {
      batch.tgtIn[(t + 1) * batch.B + b] = ex.tgt[t];
      batch.tgtOut[t * batch.B + b] = ex.tgt[t];
    }
    batch.tgtOut[(tl - 1) * batch.B + b] = Vocab::Eos;
    batch.srcLen.push_back(int32_t(sl));
    batch.tgtLen.push_back(int32_t(tl));
    batch.sourceTokens += sl;
    batch.targetTokens += tl;
  }
  return batch;
}

Batch makeSourceBatch(const std::vector<std::vector<int32_t>> &sources,
                      const std::vector<int64_t> &indices) {
  std::vector<Example> examples;
  std::vector<int64_t> local;
  for (int64_t i : indices) {
    local.push_back(int64_t(examples.size()));
    examples.push_back({sources[i], {}});
  }
  Batch batch = makeBatch(examples, local);
  batch.indices = indices;
  return batch;
}

std::vector<std::vector<int64_t>>
makeBatchOrder(const std::vector<Example> &examples, int64_t maxTokens,
               Rng &rng) {
  std::vector<int64_t> order(examples.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = int64_t(i);
  shuffle(order, rng);
  auto width = [&](int64_t i) {
    return int64_t(std::max(examples[i].src.size(), examples[i].tgt.size())) +
           1;
  };
  int64_t average = 1;
  if (!order.empty()) {
    int64_t total = 0;
    for (int64_t i : order)
      total += width(i);
    average = std::max<int64_t>(1, total / int64_t(order.size()));
  }
  size_t window =
      size_t(std::max<int64_t>(1, maxTokens / average) * 100);
  std::vector<std::vector<int64_t>> batches;
  for (size_t start = 0; start < order.size(); start += window) {
    size_t end = std::min(order.size(), start + window);
    std::stable_sort(order.begin() + start, order.begin() + end,
                     [&](int64_t a, int64_t b) {
                       if (examples[a].src.size() != examples[b].src.size())
                         return examples[a].src.size() < examples[b].src.size();
                       return examples[a].tgt.size() < examples[b].tgt.size();
                     });
    std::vector<int64_t> current;
    int64_t longest = 0;
    for (size_t k = start; k < end; ++k) {
      int64_t i = order[k];
      int64_t w = std::max(longest, width(i));
      if (!current.empty() && w * int64_t(current.size() + 1) > maxTokens) {
        batches.push_back(std::move(current));
        current.clear();
        w = width(i);
      }
      current.push_back(i);
      longest = w;
    }
    if (!current.empty())
      batches.push_back(std::move(current));
  }
  shuffle(batches, rng);
  return batches;
}

} // namespace models
