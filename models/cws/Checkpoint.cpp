//===- models/cws/Checkpoint.cpp - Saving and loading sessions ------------===//
//
// The payload inside the checksummed container (CheckpointFile.h): the run
// id (first, where the container's peekRunId looks for it), the tag "cws-1"
// that tells a cws checkpoint from another driver's, the options as
// key=value text, the character vocabulary, the --dict words (segmenting
// needs no other file), every parameter with its Adam moments, Adam's step
// and the training state.
//
//===----------------------------------------------------------------------===//

#include "models/common/CheckpointFile.h"
#include "models/common/Serialize.h"
#include "models/cws/Session.h"

namespace cws {

namespace {
const char *const PayloadTag = "cws-1";
} // namespace

std::string Session::serialize() const {
  models::ByteWriter w;
  w.u64(runId);
  w.str(PayloadTag);
  w.map(options.toMap());
  w.strings(vocab.getTokens());
  w.strings(lexicon.words());
  models::writeParams(w, model->params());
  w.u64(uint64_t(adam.step));
  w.u64(uint64_t(state.epoch));
  w.u64(uint64_t(state.batchInEpoch));
  w.u64(uint64_t(state.updates));
  w.f64(state.bestF1);
  w.u64(state.finished);
  w.f64(state.epochLossSum);
  w.u64(uint64_t(state.epochSentences));
  w.f64(state.trainSeconds);
  for (uint64_t word : state.dropoutRng.s)
    w.u64(word);
  w.doubles(state.epochLoss);
  w.doubles(state.validF1);
  w.str("END");
  return std::move(w.bytes);
}

void Session::save(const std::string &path) const {
  models::writeCheckpointFile(path, serialize());
}

std::unique_ptr<Session> Session::load(const std::string &path) {
  models::CheckpointBytes file = models::readCheckpointFile(path, "cws");
  models::ByteReader r{file.payload, path};
  std::unique_ptr<Session> session(new Session());
  session->runId = r.u64();
  std::string tag;
  try {
    tag = r.str();
  } catch (const models::DataError &) {
  }
  if (tag != PayloadTag)
    throw models::DataError(path + ": not a cws checkpoint (another "
                                   "driver's, or an older cws's)");
  session->options = TrainOptions::fromMap(r.map());
  session->vocab = Vocab::fromTokens(r.strings());
  session->lexicon = Lexicon(r.strings());
  session->build();
  models::readParams(r, session->model->params());
  session->adam.step = int64_t(r.u64());
  TrainState &s = session->state;
  s.epoch = int64_t(r.u64());
  s.batchInEpoch = int64_t(r.u64());
  s.updates = int64_t(r.u64());
  s.bestF1 = r.f64();
  s.finished = r.u64() != 0;
  s.epochLossSum = r.f64();
  s.epochSentences = int64_t(r.u64());
  s.trainSeconds = r.f64();
  for (uint64_t &word : s.dropoutRng.s)
    word = r.u64();
  s.epochLoss = r.doubles();
  s.validF1 = r.doubles();
  if (r.str() != "END")
    throw models::DataError(path + ": corrupt checkpoint");
  return session;
}

} // namespace cws
