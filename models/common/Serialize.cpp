//===- models/common/Serialize.cpp - Checkpoint payloads ------------------===//

#include "models/common/Serialize.h"

#include <cmath>

namespace models {

namespace {
/// A NaN or Inf in a loaded parameter would only show up as garbage
/// output or a NaN loss much later: name it now.
void checkFinite(const std::string &path, const Param &p) {
  for (const auto *values : {&p.value, &p.m, &p.v})
    for (float x : *values)
      if (!std::isfinite(x))
        throw DataError(path + ": parameter " + p.name +
                        (values == &p.value ? "" : " (optimiser slot)") +
                        " holds " + (std::isnan(x) ? "NaN" : "Inf"));
}
} // namespace

void writeVocab(Writer &w, const Vocab &vocab) {
  w.u64(vocab.getTokens().size());
  for (const auto &token : vocab.getTokens())
    w.str(token);
}

Vocab readVocab(Reader &r) {
  uint64_t size = r.u64();
  r.need(size > r.bytes.size() ? size : 0);
  std::vector<std::string> tokens(size);
  for (auto &token : tokens)
    token = r.str();
  return Vocab::fromTokens(tokens);
}

void writeParams(Writer &w, const std::vector<Param *> &params) {
  w.u64(params.size());
  for (const Param *p : params) {
    w.str(p->name);
    w.floats(p->value);
    w.floats(p->m);
    w.floats(p->v);
  }
}

void readParams(Reader &r, const std::vector<Param *> &params) {
  const std::string &path = r.path;
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
}

} // namespace models
