//===- models/cws/Text.h - Characters and their model form ------*- C++ -*-===//
//
// Segmentation works on characters (Unicode code points), each kept as its
// UTF-8 bytes so that output reproduces the input exactly. The model sees a
// normalised form, the one the PKU training file was prepared in: full-width
// ASCII (U+FF01..U+FF5E) becomes half-width and every ASCII digit becomes
// '0', so "１９９８年" and "2001年" look alike to the model.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_CWS_TEXT_H
#define CELLC_MODELS_CWS_TEXT_H

#include <string>
#include <vector>

namespace cws {

/// The characters of valid UTF-8 text, each as its bytes.
std::vector<std::string> splitChars(const std::string &text);

/// True for the characters that separate words in segmented text and are
/// never part of a word: ASCII white space and the ideographic space U+3000
/// (the SIGHAN scorer treats both as separators).
bool isSpace(const std::string &ch);

/// The words of one line of segmented text, split at isSpace characters.
std::vector<std::string> splitWords(const std::string &line);

/// The model's form of one character (see the file comment).
std::string normalizeChar(const std::string &ch);

} // namespace cws

#endif
