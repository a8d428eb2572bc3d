//===- models/common/Serialize.h - Checkpoint payloads ----------*- C++ -*-===//
//
// The bytes inside a checkpoint (CheckpointFile.h frames them): integers
// and doubles in the machine's byte order, strings and arrays with their
// sizes first, and a model's parameters with their optimiser moments. A
// reader that runs out of bytes says the file is truncated or corrupt.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_SERIALIZE_H
#define CELLC_MODELS_COMMON_SERIALIZE_H

#include "models/common/Param.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace models {

struct ByteWriter {
  std::string bytes;
  void u64(uint64_t x);
  void f64(double x);
  void str(const std::string &s);
  void floats(const std::vector<float> &v);
  void doubles(const std::vector<double> &v);
  void strings(const std::vector<std::string> &v);
  void map(const std::map<std::string, std::string> &m);
};

struct ByteReader {
  const std::string &bytes;
  /// Named in every error.
  std::string path;
  size_t pos = 0;

  /// Throws DataError unless n more bytes are left.
  void need(uint64_t n);
  uint64_t u64();
  double f64();
  std::string str();
  std::vector<float> floats();
  std::vector<double> doubles();
  std::vector<std::string> strings();
  std::map<std::string, std::string> map();
};

/// Every parameter's name, value and optimiser moments (m, v). DataError
/// ("not saved: parameter W holds NaN") when any of them is not finite.
void writeParams(ByteWriter &w, const std::vector<Param *> &params);
/// Reads what writeParams wrote into parameters of the same names, order
/// and sizes. DataError naming the file: another count, a missing name, a
/// wrong size, a NaN or Inf.
void readParams(ByteReader &r, const std::vector<Param *> &params);

} // namespace models

#endif
