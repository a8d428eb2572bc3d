//===- models/nmt/Checkpoint.cpp - Saving and resuming sessions ----------===//
//
// A checkpoint's payload: the run id, the options as key=value pairs, the
// codec (subword models as serialized protos), both vocabularies, every
// parameter with its Adam moments, and the training state (epoch, position
// in the epoch and the loss summed so far in it, updates, lr, best BLEU,
// the dropout RNG). CheckpointFile frames it with a checksum and writes it
// atomically.
//
//===----------------------------------------------------------------------===//

#include "models/common/CheckpointFile.h"
#include "models/common/Serialize.h"
#include "models/nmt/Trainer.h"

#include <mutex>

namespace nmt {

std::string Session::serialize() const {
  ByteWriter w;
  w.u64(runId);
  w.map(options.toMap());
  w.str(codec.mode);
  w.str(codec.srcSpm.serialized());
  w.str(codec.tgtSpm.serialized());
  for (const Vocab *vocab : {&srcVocab, &tgtVocab})
    w.strings(vocab->getTokens());
  writeParams(w, model->params());
  w.u64(uint64_t(adam.step));
  w.u64(uint64_t(state.epoch));
  w.u64(uint64_t(state.batchInEpoch));
  w.u64(uint64_t(state.updates));
  w.u64(uint64_t(state.badEpochs));
  w.f64(state.bestBleu);
  w.f64(state.lr);
  w.u64(state.finished);
  for (uint64_t word : state.dropoutRng.s)
    w.u64(word);
  w.doubles(state.epochLoss);
  w.doubles(state.validPerplexity);
  w.doubles(state.validBleu);
  w.f64(state.epochLossSum);
  w.u64(uint64_t(state.epochTokens));
  w.str("END");
  return std::move(w.bytes);
}

void Session::save(const std::string &path) const {
  writeCheckpointFile(path, serialize());
}

std::unique_ptr<Session> Session::load(const std::string &path) {
  return fromCheckpoint(readCheckpointFile(path), path);
}

std::unique_ptr<Session> Session::copy() const {
  // What save() would write and load() read back: serialize() writes
  // the payload of checkpoint format 2.
  CheckpointBytes file;
  file.version = 2;
  file.payload = serialize();
  // Building sets the process's product precision (what training reads);
  // a copy leaves it as it was, also when threads copy sessions of other
  // precisions at once (side-by-side decoding of a mixed ensemble).
  static std::mutex copying;
  std::lock_guard<std::mutex> lock(copying);
  const cellrt::Precision process = models::productPrecision();
  std::unique_ptr<Session> session =
      fromCheckpoint(file, "a copy of a session");
  models::setProductPrecision(process);
  return session;
}

std::unique_ptr<Session> Session::fromCheckpoint(const CheckpointBytes &file,
                                                 const std::string &path) {
  ByteReader r{file.payload, path};
  std::unique_ptr<Session> session(new Session());
  if (file.version >= 2)
    session->runId = r.u64();
  session->options = TrainOptions::fromMap(r.map());
  session->codec.mode = r.str();
  std::string srcProto = r.str(), tgtProto = r.str();
  if (session->codec.mode == "bpe") {
    try {
      session->codec.srcSpm = Subword::fromSerialized(srcProto);
      session->codec.tgtSpm = Subword::fromSerialized(tgtProto);
    } catch (const DataError &error) {
      throw DataError(path + ": " + error.what());
    }
  }
  for (Vocab *vocab : {&session->srcVocab, &session->tgtVocab})
    *vocab = Vocab::fromTokens(r.strings());
  session->build();
  readParams(r, session->model->params());
  session->adam.step = int64_t(r.u64());
  TrainState &s = session->state;
  s.epoch = int64_t(r.u64());
  s.batchInEpoch = int64_t(r.u64());
  s.updates = int64_t(r.u64());
  s.badEpochs = int64_t(r.u64());
  s.bestBleu = r.f64();
  s.lr = r.f64();
  s.finished = r.u64() != 0;
  for (uint64_t &word : s.dropoutRng.s)
    word = r.u64();
  s.epochLoss = r.doubles();
  s.validPerplexity = r.doubles();
  s.validBleu = r.doubles();
  if (file.version >= 2) {
    s.epochLossSum = r.f64();
    s.epochTokens = int64_t(r.u64());
  }
  if (r.str() != "END")
    throw DataError(path + ": corrupt checkpoint");
  return session;
}

} // namespace nmt
