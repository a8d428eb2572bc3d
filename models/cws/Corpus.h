//===- models/cws/Corpus.h - Segmented and raw Chinese text -----*- C++ -*-===//
//
// The corpora of the segmentation driver, as sentences of characters with
// B/M/E/S tags (Begin, Middle, End of a multi-character word, Single):
//   - segmented text (SIGHAN's PKU files): one sentence per line, words
//     separated by white space (two ASCII spaces there), CRLF or LF;
//   - CoNLL-U (UD Chinese GSD): ten tab-separated columns, the word in
//     column 2, `#` comment lines, a blank line after each sentence;
//     multi-word token ranges (`1-2`) and empty nodes (`1.1`) are skipped;
//   - raw text: one sentence per line, to be segmented.
// Every error names FILE:LINE.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_CWS_CORPUS_H
#define CELLC_MODELS_CWS_CORPUS_H

#include <cstdint>
#include <string>
#include <vector>

namespace cws {

enum Tag : int32_t { B = 0, M = 1, E = 2, S = 3 };
constexpr int64_t NumTags = 4;

struct Sentence {
  /// The characters as written, without the separators.
  std::vector<std::string> chars;
  /// Segmented text: one gold tag per character. Raw text: empty.
  std::vector<int32_t> tags;
  /// Raw text: 1 where white space preceded the character in the input, a
  /// word boundary the segmentation keeps. Empty otherwise.
  std::vector<uint8_t> spaceBefore;
};

/// The characters and tags of a sequence of words.
Sentence tagWords(const std::vector<std::string> &words);

/// The words of characters with tags. Any tag sequence gives words: a word
/// ends at E or S, or before B or S, so an ill-formed sequence (B B, M
/// first) still segments the text completely.
std::vector<std::string> wordsFromTags(const std::vector<std::string> &chars,
                                       const std::vector<int32_t> &tags);

/// Words joined by two spaces, SIGHAN's separator.
std::string joinWords(const std::vector<std::string> &words);

enum class Format { Auto, Segmented, Conllu, Raw };

/// "segmented", "conllu", "raw" or "auto" (DataError for another name).
Format parseFormat(const std::string &name);

/// Auto: CoNLL-U for a .conll or .conllu file, otherwise `otherwise`.
Format resolveFormat(Format format, const std::string &path,
                     Format otherwise);

/// Gold sentences (tags set) of a segmented or CoNLL-U file (Auto: by the
/// extension, segmented otherwise). An empty line inside a segmented file
/// or an empty sentence in CoNLL-U is an error; blank lines at the end of
/// a file are not.
std::vector<Sentence> readGold(const std::string &path,
                               Format format = Format::Auto);

/// Sentences to segment: raw lines ("" or "-": standard input; an empty
/// line is an empty sentence), or the characters of a CoNLL-U or segmented
/// file's sentences.
std::vector<Sentence> readToSegment(const std::string &path,
                                    Format format = Format::Auto);

/// Every word of a word list (one word per line, as SIGHAN's
/// pku_training_words) or of a segmented or CoNLL-U corpus.
std::vector<std::string> readWords(const std::string &path,
                                   Format format = Format::Auto);

} // namespace cws

#endif
