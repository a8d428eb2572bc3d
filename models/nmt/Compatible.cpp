//===- models/nmt/Compatible.cpp - Checkpoints that decode together -------===//
//
// What an ensemble (same tokens) and checkpoint averaging (same model too)
// need of the checkpoints they read; each difference is an error naming
// the file.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/Translator.h"

namespace nmt {

namespace {

[[noreturn]] void differs(const std::string &path, const std::string &what,
                          const std::string &firstPath) {
  throw DataError(path + ": " + what + " differs from " + firstPath + "'s");
}

void checkVocabulary(const Vocab &first, const Vocab &other,
                     const std::string &side, const std::string &firstPath,
                     const std::string &path) {
  if (first.getTokens() == other.getTokens())
    return;
  differs(path,
          side + " vocabulary (" + std::to_string(other.size()) + " against " +
              std::to_string(first.size()) + " tokens)",
          firstPath);
}

/// The options that fix the parameters' meaning (the cells included).
// clang-format off
const char *const ArchitectureOptions[] = {
    "arch", "cell", "cell-source", "cell2", "cell2-source", "enc-layers",
    "dec-layers", "context", "share-cell", "tie-output", "no-layernorm",
    "no-highway", "single-attention", "deep-first", "between-layers", "emb",
    "hidden", "att", "readout"};
// clang-format on

} // namespace

void checkSameVocabularies(const Session &first, const std::string &firstPath,
                           const Session &other, const std::string &path) {
  if (other.codec.mode != first.codec.mode)
    differs(path,
            "tokenizer (" + other.codec.mode + " against " + first.codec.mode +
                ")",
            firstPath);
  if (other.codec.srcSpm.serialized() != first.codec.srcSpm.serialized() ||
      other.codec.tgtSpm.serialized() != first.codec.tgtSpm.serialized())
    differs(path, "subword model", firstPath);
  checkVocabulary(first.srcVocab, other.srcVocab, "source", firstPath, path);
  checkVocabulary(first.tgtVocab, other.tgtVocab, "target", firstPath, path);
}

void checkSameModel(const Session &first, const std::string &firstPath,
                    const Session &other, const std::string &path) {
  checkSameVocabularies(first, firstPath, other, path);
  auto a = first.options.toMap(), b = other.options.toMap();
  for (const char *key : ArchitectureOptions)
    if (a[key] != b[key])
      differs(path,
              std::string("--") + key + " (" + b[key] + " against " + a[key] +
                  ")",
              firstPath);
  auto mine = first.model->params(), theirs = other.model->params();
  if (mine.size() != theirs.size())
    differs(path, "parameter count", firstPath);
  for (size_t i = 0; i < mine.size(); ++i)
    if (mine[i]->name != theirs[i]->name || mine[i]->shape != theirs[i]->shape)
      differs(path, "parameter " + theirs[i]->name, firstPath);
}

} // namespace nmt
