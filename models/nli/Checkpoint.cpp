//===- models/nli/Checkpoint.cpp - Saving and loading sessions ------------===//
//
// The payload inside the checksummed container (CheckpointFile.h): the run
// id (first, where peekRunId looks for it), the tag "cellc-nli-3", the
// options as key=value text (OptionTable.h), the vocabulary, every
// parameter with its Adam moments, Adam's step and the training state down
// to the position in the epoch. Checkpoints of tags 1 and 2 (the tag
// first, options in a fixed binary layout, no run id) are still read.
//
//===----------------------------------------------------------------------===//

#include "models/common/CheckpointFile.h"
#include "models/common/Serialize.h"
#include "models/nli/Training.h"

#include <cstring>

namespace nli {
using namespace models;

namespace {
const char *const PayloadTag = "cellc-nli-3";
// Before the option table: the tag first; 2 adds the cell's source.
const char *const LegacyTagWithCellSource = "cellc-nli-2";
const char *const LegacyTag = "cellc-nli-1";

/// Whether `payload` starts with a legacy tag (a string: its u64 length,
/// then the text).
bool isLegacy(const std::string &payload) {
  const size_t length = std::strlen(LegacyTag);
  uint64_t first = 0;
  if (payload.size() < 8 + length)
    return false;
  std::memcpy(&first, payload.data(), 8);
  std::string tag = payload.substr(8, length);
  return first == length &&
         (tag == LegacyTag || tag == LegacyTagWithCellSource);
}

/// The options of a legacy payload, in their fixed layout.
TrainOptions readLegacyOptions(ByteReader &r, bool withCellSource) {
  TrainOptions o;
  for (std::string *text : {&o.train, &o.valid, &o.embeddings, &o.model.kind,
                            &o.model.cell, &o.out})
    *text = r.str();
  int64_t vocab = 0;
  for (int64_t *number : {&o.vocabMax, &o.minCount, &vocab, &o.model.emb,
                          &o.model.hidden, &o.batch, &o.epochs, &o.maxUpdates})
    *number = int64_t(r.u64());
  o.lr = float(r.f64());
  o.clip = float(r.f64());
  o.initScale = float(r.f64());
  o.model.dropout = float(r.f64());
  o.seed = r.u64();
  uint64_t flags = r.u64();
  o.freezeEmbeddings = flags & 1;
  o.lowercase = flags & 2;
  // Unset in checkpoints from before 2026-11-28, which attended raw states.
  o.betweenLayers = flags & 4 ? "tanh" : "raw";
  o.init = flags & 8 ? "fan_in" : "paper";
  if (withCellSource)
    o.model.cellSource = r.str();
  // Those runs had no early stopping.
  o.patience = 0;
  return o;
}
} // namespace

void Session::save(const std::string &path) const {
  ByteWriter w;
  w.u64(runId);
  w.str(PayloadTag);
  w.map(options.toMap());
  w.strings(vocab.getTokens());
  writeParams(w, model->params().all());
  w.u64(uint64_t(adam.step));
  for (int64_t count : {state.epoch, state.batchInEpoch, state.updates,
                        state.badEpochs, state.epochPairs})
    w.u64(uint64_t(count));
  w.f64(state.bestAccuracy);
  w.f64(state.epochLossSum);
  w.u64(state.finished);
  for (uint64_t word : state.dropoutRng.s)
    w.u64(word);
  w.str("END");
  writeCheckpointFile(path, w.bytes);
}

std::unique_ptr<Session> Session::load(const std::string &path) {
  CheckpointBytes file = readCheckpointFile(path, "nli");
  ByteReader r{file.payload, path};
  std::unique_ptr<Session> session(new Session());
  TrainState &s = session->state;
  if (isLegacy(file.payload)) {
    std::string tag = r.str();
    // peekRunId reads the tag's length as the run id: keeping it lets the
    // run resume into its own file.
    session->runId = std::strlen(LegacyTag);
    session->options = readLegacyOptions(r, tag == LegacyTagWithCellSource);
  } else {
    session->runId = r.u64();
    std::string tag;
    try {
      tag = r.str();
    } catch (const DataError &) {
    }
    if (tag != PayloadTag)
      throw DataError(path + ": not an nli checkpoint (another driver's, "
                             "or a newer nli's)");
    session->options = TrainOptions::fromMap(r.map());
  }
  session->vocab = Vocab::fromTokens(r.strings());
  session->build();
  readParams(r, session->model->params().all());
  session->adam.step = int64_t(r.u64());
  if (isLegacy(file.payload)) {
    s.epoch = int64_t(r.u64());
    s.updates = int64_t(r.u64());
    s.bestAccuracy = r.f64();
  } else {
    for (int64_t *count :
         {&s.epoch, &s.batchInEpoch, &s.updates, &s.badEpochs, &s.epochPairs})
      *count = int64_t(r.u64());
    s.bestAccuracy = r.f64();
    s.epochLossSum = r.f64();
    s.finished = r.u64() != 0;
  }
  for (uint64_t &word : s.dropoutRng.s)
    word = r.u64();
  if (r.str() != "END")
    throw DataError(path + ": corrupt checkpoint");
  return session;
}

} // namespace nli
