//===- models/common/Data.h - Corpora, vocabularies, batches ----*- C++ -*-===//
//
// Reading parallel text (with errors that name the file and the line),
// vocabularies with the four reserved ids, and token-based batches of
// sentences of similar lengths. Subword models are in Subword.h.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_DATA_H
#define CELLC_MODELS_COMMON_DATA_H

#include "models/common/Math.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace models {

/// Bad input data or a bad command line: the message is for the user.
struct DataError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Byte offset of the first invalid UTF-8 sequence, or -1.
int64_t findInvalidUtf8(const std::string &text);
/// The lines of a UTF-8 text file. Errors: missing file, empty file, invalid
/// UTF-8 (`file:LINE: invalid UTF-8 at byte N`).
std::vector<std::string> readLines(const std::string &path);
/// readLines, or the lines of standard input for "" or "-" (where no input
/// is no line rather than an error; errors name <stdin>). A CR before each
/// LF is dropped, as readLines does.
std::vector<std::string> readInputLines(const std::string &path);
/// Writes each line and a LF to `path`, or standard output for "".
/// DataError when the file cannot be written.
void writeOutputLines(const std::string &path,
                      const std::vector<std::string> &lines);
/// Both files, which must have the same number of lines.
void readParallel(const std::string &srcPath, const std::string &tgtPath,
                  std::vector<std::string> &src, std::vector<std::string> &tgt);
std::vector<std::string> splitWhitespace(const std::string &line);
std::string joinTokens(const std::vector<std::string> &tokens,
                       const std::string &sep = " ");

/// Token <-> id. Ids 0..3 are <pad>, <unk>, <s>, </s>.
class Vocab {
public:
  enum : int32_t { Pad = 0, Unk = 1, Bos = 2, Eos = 3 };
  Vocab();
  /// The most frequent tokens (ties: alphabetical) up to maxSize entries in
  /// all (0: no limit) among those seen at least minCount times.
  static Vocab build(const std::vector<std::vector<std::string>> &sentences,
                     int64_t maxSize, int64_t minCount);
  static Vocab fromTokens(const std::vector<std::string> &tokens);
  int32_t id(const std::string &token) const;
  const std::string &token(int32_t id) const { return tokens[id]; }
  int64_t size() const { return int64_t(tokens.size()); }
  std::vector<int32_t> encode(const std::vector<std::string> &words) const;
  /// Stops at </s>; skips <s> and <pad>.
  std::vector<std::string> decode(const std::vector<int32_t> &ids) const;
  const std::vector<std::string> &getTokens() const { return tokens; }

private:
  std::vector<std::string> tokens;
  std::unordered_map<std::string, int32_t> index;
};

/// One sentence pair as ids; tgt excludes <s> and </s>, src excludes </s>.
struct Example {
  std::vector<int32_t> src, tgt;
};

/// A padded batch, time-major. src ends with </s>; tgtIn starts with <s>,
/// tgtOut ends with </s>; both have tgtLen[b] valid steps.
struct Batch {
  int64_t B = 0, Tx = 0, Ty = 0, targetTokens = 0, sourceTokens = 0;
  std::vector<int32_t> src, tgtIn, tgtOut; // [Tx,B], [Ty,B], [Ty,B]
  std::vector<int32_t> srcLen, tgtLen;
  std::vector<int64_t> indices; // into the example list
};

Batch makeBatch(const std::vector<Example> &examples,
                const std::vector<int64_t> &indices);
/// Source-only batch for decoding.
Batch makeSourceBatch(const std::vector<std::vector<int32_t>> &sources,
                      const std::vector<int64_t> &indices);

/// Groups examples into batches of similar lengths whose padded size
/// (sentences * longest side) stays within maxTokens, in an order drawn from
/// `rng`: shuffle, sort windows of ~100 batches by length, cut, shuffle.
std::vector<std::vector<int64_t>>
makeBatchOrder(const std::vector<Example> &examples, int64_t maxTokens,
               Rng &rng);

} // namespace models

#endif
