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
#include "models/nmt/Trainer.h"

#include <cmath>
#include <cstring>
#include <sys/stat.h>

namespace nmt {

namespace {
struct Writer {
  std::string bytes;
  void u64(uint64_t x) { bytes.append(reinterpret_cast<char *>(&x), 8); }
  void f64(double x) { bytes.append(reinterpret_cast<char *>(&x), 8); }
  void str(const std::string &s) {
    u64(s.size());
    bytes += s;
  }
  void floats(const std::vector<float> &v) {
    u64(v.size());
    bytes.append(reinterpret_cast<const char *>(v.data()), v.size() * 4);
  }
  void doubles(const std::vector<double> &v) {
    u64(v.size());
    for (double x : v)
      f64(x);
  }
};

struct Reader {
  const std::string &bytes;
  std::string path;
  size_t pos = 0;
  void need(uint64_t n) {
    if (n > bytes.size() - pos)
      throw DataError(path + ": truncated or corrupt checkpoint");
  }
  uint64_t u64() {
    need(8);
    uint64_t x;
    std::memcpy(&x, bytes.data() + pos, 8);
    pos += 8;
    return x;
  }
  double f64() {
    need(8);
    double x;
    std::memcpy(&x, bytes.data() + pos, 8);
    pos += 8;
    return x;
  }
  std::string str() {
    uint64_t n = u64();
    need(n);
    std::string s = bytes.substr(pos, n);
    pos += n;
    return s;
  }
  std::vector<float> floats() {
    uint64_t n = u64();
    need(n / 4 > bytes.size() ? bytes.size() + 1 : n * 4);
    std::vector<float> v(n);
    std::memcpy(v.data(), bytes.data() + pos, n * 4);
    pos += n * 4;
    return v;
  }
  std::vector<double> doubles() {
    uint64_t n = u64();
    need(n / 8 > bytes.size() ? bytes.size() + 1 : n * 8);
    std::vector<double> v;
    for (uint64_t i = 0; i < n; ++i)
      v.push_back(f64());
    return v;
  }
};

/// A NaN or Inf in a loaded parameter would only show up as garbage
/// output or a NaN loss much later: name it now.
void checkFinite(const std::string &path, const Param &p) {
  for (const auto *values : {&p.value, &p.m, &p.v})
    for (float x : *values)
      if (!std::isfinite(x))
        throw DataError(path + ": parameter " + p.name +
                        (values == &p.value ? "" : " (Adam moment)") +
                        " holds " + (std::isnan(x) ? "NaN" : "Inf"));
}
} // namespace

std::string Session::serialize() const {
  Writer w;
  w.u64(runId);
  auto map = options.toMap();
  w.u64(map.size());
  for (const auto &[key, value] : map) {
    w.str(key);
    w.str(value);
  }
  w.str(codec.mode);
  w.str(codec.srcSpm.serialized());
  w.str(codec.tgtSpm.serialized());
  for (const Vocab *vocab : {&srcVocab, &tgtVocab}) {
    w.u64(vocab->getTokens().size());
    for (const auto &token : vocab->getTokens())
      w.str(token);
  }
  auto params = model->params();
  w.u64(params.size());
  for (const Param *p : params) {
    w.str(p->name);
    w.floats(p->value);
    w.floats(p->m);
    w.floats(p->v);
  }
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
  CheckpointBytes file = readCheckpointFile(path);
  Reader r{file.payload, path};
  std::unique_ptr<Session> session(new Session());
  if (file.version >= 2)
    session->runId = r.u64();
  std::map<std::string, std::string> map;
  uint64_t count = r.u64();
  for (uint64_t i = 0; i < count; ++i) {
    std::string key = r.str();
    map[key] = r.str();
  }
  session->options = TrainOptions::fromMap(map);
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
  for (Vocab *vocab : {&session->srcVocab, &session->tgtVocab}) {
    uint64_t size = r.u64();
    r.need(size > r.bytes.size() ? size : 0);
    std::vector<std::string> tokens(size);
    for (auto &token : tokens)
      token = r.str();
    *vocab = Vocab::fromTokens(tokens);
  }
  session->build();
  auto params = session->model->params();
  if (r.u64() != params.size())
    throw DataError(path + ": parameter count does not match the model");
  for (Param *p : params) {
    if (r.str() != p->name)
      throw DataError(path + ": parameter " + p->name + " missing");
    p->value = r.floats();
    p->m = r.floats();
    p->v = r.floats();
    if (p->value.size() != p->grad.size() ||
        (!p->m.empty() && p->m.size() != p->value.size()) ||
        p->v.size() != p->m.size())
      throw DataError(path + ": parameter " + p->name + " has a wrong size");
    checkFinite(path, *p);
  }
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

void checkOutputOwnership(const std::string &path, uint64_t runId, bool force) {
  struct stat info;
  if (force || ::stat(path.c_str(), &info) != 0)
    return;
  uint64_t theirs = 0;
  try {
    theirs = peekRunId(path);
  } catch (const DataError &error) {
    throw DataError(std::string(error.what()) +
                    "; refusing to overwrite it (--force overwrites)");
  }
  if (theirs == runId)
    return;
  throw DataError(path + " holds the checkpoint of another run; refusing to "
                         "overwrite it (continue that run with --resume, "
                         "choose another --out, or --force to overwrite)");
}

} // namespace nmt
