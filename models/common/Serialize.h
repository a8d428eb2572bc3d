//===- models/common/Serialize.h - Checkpoint payloads ----------*- C++ -*-===//
//
// The byte-level pieces of every driver's checkpoint payload: integers,
// doubles, strings and float arrays in host order, and the two things all
// drivers save the same way: vocabularies and parameters with their
// optimiser slots. CheckpointFile.h frames the payload with a checksum.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_SERIALIZE_H
#define CELLC_MODELS_COMMON_SERIALIZE_H

#include "models/common/Data.h"
#include "models/common/Param.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace models {

/// Appends values to a payload.
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

/// Reads what Writer wrote; a short payload is a DataError naming `path`.
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

/// The tokens of a vocabulary, in id order.
void writeVocab(Writer &w, const Vocab &vocab);
Vocab readVocab(Reader &r);

/// Every parameter's name, value and optimiser slots.
void writeParams(Writer &w, const std::vector<Param *> &params);
/// Into a model built with the same architecture: the names, order and
/// sizes must match, and no value may be NaN or Inf (DataError naming the
/// file and the parameter).
void readParams(Reader &r, const std::vector<Param *> &params);

} // namespace models

#endif
