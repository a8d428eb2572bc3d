//===- models/common/Subword.h - Subword models (sentencepiece) -*- C++ -*-===//
//
// Kept apart from the layer library: sentencepiece brings its own protobuf,
// which cannot share a process with LibTorch's (the layer tests link
// LibTorch).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_SUBWORD_H
#define CELLC_MODELS_COMMON_SUBWORD_H

#include <memory>
#include <string>
#include <vector>

namespace models {

/// A sentencepiece BPE model, kept as its serialized proto so it can travel
/// inside a checkpoint.
class Subword {
public:
  Subword();
  ~Subword();
  Subword(Subword &&) noexcept;
  Subword &operator=(Subword &&) noexcept;
  /// Trains a BPE model of vocabSize pieces on `sentences`.
  static Subword train(const std::vector<std::string> &sentences,
                       int64_t vocabSize);
  /// Loads a `.model` file written by spm_train (DataError when missing).
  static Subword loadFile(const std::string &path);
  static Subword fromSerialized(const std::string &proto);
  std::vector<std::string> encode(const std::string &line) const;
  std::string decode(const std::vector<std::string> &pieces) const;
  const std::string &serialized() const { return proto; }

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
  std::string proto;
};

} // namespace models

#endif
