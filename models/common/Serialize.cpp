//===- models/common/Serialize.cpp - Checkpoint payloads ------------------===//

#include "models/common/Serialize.h"

#include "models/common/Data.h"

#include <cmath>
#include <cstring>

namespace models {

void ByteWriter::u64(uint64_t x) {
  bytes.append(reinterpret_cast<char *>(&x), 8);
}

void ByteWriter::f64(double x) {
  bytes.append(reinterpret_cast<char *>(&x), 8);
}

void ByteWriter::str(const std::string &s) {
  u64(s.size());
  bytes += s;
}

void ByteWriter::floats(const std::vector<float> &v) {
  u64(v.size());
  bytes.append(reinterpret_cast<const char *>(v.data()), v.size() * 4);
}

void ByteWriter::doubles(const std::vector<double> &v) {
  u64(v.size());
  for (double x : v)
    f64(x);
}

void ByteWriter::strings(const std::vector<std::string> &v) {
  u64(v.size());
  for (const std::string &s : v)
    str(s);
}

void ByteWriter::map(const std::map<std::string, std::string> &m) {
  u64(m.size());
  for (const auto &[key, value] : m) {
    str(key);
    str(value);
  }
}

void ByteReader::need(uint64_t n) {
  if (n > bytes.size() - pos)
    throw DataError(path + ": truncated or corrupt checkpoint");
}

uint64_t ByteReader::u64() {
  need(8);
  uint64_t x;
  std::memcpy(&x, bytes.data() + pos, 8);
  pos += 8;
  return x;
}

double ByteReader::f64() {
  need(8);
  double x;
  std::memcpy(&x, bytes.data() + pos, 8);
  pos += 8;
  return x;
}

std::string ByteReader::str() {
  uint64_t n = u64();
  need(n);
  std::string s = bytes.substr(pos, n);
  pos += n;
  return s;
}

std::vector<float> ByteReader::floats() {
  uint64_t n = u64();
  // n * 4 must not overflow before the check.
  need(n / 4 > bytes.size() ? bytes.size() + 1 : n * 4);
  std::vector<float> v(n);
  std::memcpy(v.data(), bytes.data() + pos, n * 4);
  pos += n * 4;
  return v;
}

std::vector<double> ByteReader::doubles() {
  uint64_t n = u64();
  need(n / 8 > bytes.size() ? bytes.size() + 1 : n * 8);
  std::vector<double> v;
  for (uint64_t i = 0; i < n; ++i)
    v.push_back(f64());
  return v;
}

std::vector<std::string> ByteReader::strings() {
  uint64_t n = u64();
  // Each string takes at least its 8-byte size.
  need(n > bytes.size() / 8 ? bytes.size() + 1 : 0);
  std::vector<std::string> v(n);
  for (std::string &s : v)
    s = str();
  return v;
}

std::map<std::string, std::string> ByteReader::map() {
  std::map<std::string, std::string> m;
  uint64_t count = u64();
  for (uint64_t i = 0; i < count; ++i) {
    std::string key = str();
    m[key] = str();
  }
  return m;
}

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

void writeParams(ByteWriter &w, const std::vector<Param *> &params) {
  w.u64(params.size());
  for (const Param *p : params) {
    // A checkpoint that readParams would refuse must never replace one it
    // accepts.
    checkFinite("not saved", *p);
    w.str(p->name);
    w.floats(p->value);
    w.floats(p->m);
    w.floats(p->v);
  }
}

void readParams(ByteReader &r, const std::vector<Param *> &params) {
  if (r.u64() != params.size())
    throw DataError(r.path + ": parameter count does not match the model");
  for (Param *p : params) {
    if (r.str() != p->name)
      throw DataError(r.path + ": parameter " + p->name + " missing");
    p->value = r.floats();
    p->m = r.floats();
    p->v = r.floats();
    if (p->value.size() != p->grad.size() ||
        (!p->m.empty() && p->m.size() != p->value.size()) ||
        p->v.size() != p->m.size())
      throw DataError(r.path + ": parameter " + p->name + " has a wrong size");
    checkFinite(r.path, *p);
  }
}

} // namespace models
