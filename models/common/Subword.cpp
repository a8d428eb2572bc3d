//===- models/common/Subword.cpp - Subword models (sentencepiece) ---------===//

#include "models/common/Subword.h"

#include "models/common/Data.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <fstream>
#include <sstream>

namespace models {

//===--- Subword ----------------------------------------------------------===//

struct Subword::Impl {
  sentencepiece::SentencePieceProcessor processor;
};

Subword::Subword() : impl(std::make_unique<Impl>()) {}
Subword::~Subword() = default;
Subword::Subword(Subword &&) noexcept = default;
Subword &Subword::operator=(Subword &&) noexcept = default;

namespace {
class VectorIterator : public sentencepiece::SentenceIterator {
public:
  explicit VectorIterator(const std::vector<std::string> &lines)
      : lines(lines) {}
  bool done() const override { return i >= lines.size(); }
  void Next() override { ++i; }
  const std::string &value() const override { return lines[i]; }
  sentencepiece::util::Status status() const override { return {}; }

private:
  const std::vector<std::string> &lines;
  size_t i = 0;
};
} // namespace

Subword Subword::train(const std::vector<std::string> &sentences,
                       int64_t vocabSize) {
  VectorIterator it(sentences);
  std::string proto;
  std::unordered_map<std::string, std::string> args = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(vocabSize)},
      {"character_coverage", "1.0"},
      {"minloglevel", "2"},
      {"num_threads", "2"},
      {"hard_vocab_limit", "false"},
      {"input_sentence_size", "2000000"},
      {"shuffle_input_sentence", "true"},
  };
  auto status = sentencepiece::SentencePieceTrainer::Train(args, &it, &proto);
  if (!status.ok())
    throw DataError("sentencepiece training failed: " + status.ToString());
  return fromSerialized(proto);
}

Subword Subword::loadFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(path + ": cannot open sentencepiece model file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string proto = buffer.str();
  if (proto.empty())
    throw DataError(path + ": empty sentencepiece model file");
  try {
    return fromSerialized(proto);
  } catch (const DataError &error) {
    throw DataError(path + ": " + error.what());
  }
}

Subword Subword::fromSerialized(const std::string &proto) {
  Subword subword;
  auto status = subword.impl->processor.LoadFromSerializedProto(proto);
  if (!status.ok())
    throw DataError("not a sentencepiece model: " + status.ToString());
  subword.proto = proto;
  return subword;
}

std::vector<std::string> Subword::encode(const std::string &line) const {
  std::vector<std::string> pieces;
  auto status = impl->processor.Encode(line, &pieces);
  if (!status.ok())
    throw DataError("sentencepiece encode failed: " + status.ToString());
  return pieces;
}

std::string Subword::decode(const std::vector<std::string> &pieces) const {
  return impl->processor.DecodePieces(pieces);
}

} // namespace models
