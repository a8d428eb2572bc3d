//===- models/nmt/Checkpoint.cpp - Saving and resuming sessions ----------===//
//
// A checkpoint is one binary file: magic, the options as key=value pairs,
// the codec (subword models as serialized protos), both vocabularies, every
// parameter with its Adam moments, and the training state (epoch, position
// in the epoch, updates, lr, best BLEU, the dropout RNG). It is written to
// PATH.tmp and renamed over PATH, so a crash never leaves half a file.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/Trainer.h"

#include <cstdio>
#include <cstring>
#include <fstream>

namespace nmt {

namespace {
const char magic[] = "CELLC-NMT-CHECKPOINT-1";

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
  void need(size_t n) {
    if (pos + n > bytes.size())
      throw DataError(path + ": truncated checkpoint");
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
    need(n * 4);
    std::vector<float> v(n);
    std::memcpy(v.data(), bytes.data() + pos, n * 4);
    pos += n * 4;
    return v;
  }
  std::vector<double> doubles() {
    uint64_t n = u64();
    std::vector<double> v;
    for (uint64_t i = 0; i < n; ++i)
      v.push_back(f64());
    return v;
  }
};
} // namespace

void Session::save(const std::string &path) const {
  Writer w;
  w.str(magic);
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
  w.str("END");

  std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw DataError(temp + ": cannot write the checkpoint");
    out.write(w.bytes.data(), std::streamsize(w.bytes.size()));
    out.flush();
    if (!out)
      throw DataError(temp + ": write failed");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0)
    throw DataError("cannot rename " + temp + " to " + path);
}

std::unique_ptr<Session> Session::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(path + ": cannot open the checkpoint");
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  Reader r{bytes, path};
  if (bytes.size() < sizeof magic || r.str() != magic)
    throw DataError(path + ": not an nmt checkpoint");
  std::unique_ptr<Session> session(new Session());
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
    session->codec.srcSpm = Subword::fromSerialized(srcProto);
    session->codec.tgtSpm = Subword::fromSerialized(tgtProto);
  }
  for (Vocab *vocab : {&session->srcVocab, &session->tgtVocab}) {
    std::vector<std::string> tokens(r.u64());
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
    if (p->value.size() != p->grad.size())
      throw DataError(path + ": parameter " + p->name + " has a wrong size");
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
  if (r.str() != "END")
    throw DataError(path + ": corrupt checkpoint");
  return session;
}

} // namespace nmt
