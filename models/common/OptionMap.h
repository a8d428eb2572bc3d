//===- models/common/OptionMap.h - Options as key=value text ----*- C++ -*-===//
//
// A driver's training options as the text its checkpoint stores and
// `train --resume` compares (OptionTable.h walks a driver's table with
// these). Numbers are written so that they read back exactly (17
// significant digits).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_OPTIONMAP_H
#define CELLC_MODELS_COMMON_OPTIONMAP_H

#include <cstdint>
#include <map>
#include <string>

namespace models {

using OptionMap = std::map<std::string, std::string>;

std::string optionText(const std::string &value);
std::string optionText(bool value);
std::string optionText(int64_t value);
std::string optionText(uint64_t value);
std::string optionText(double value);
inline std::string optionText(float value) {
  return optionText(double(value));
}

/// Parses `text` into the field; DataError `--KEY: not a number: 'TEXT'`.
void parseOption(const std::string &key, const std::string &text,
                 std::string &field);
void parseOption(const std::string &key, const std::string &text, bool &field);
void parseOption(const std::string &key, const std::string &text,
                 int64_t &field);
void parseOption(const std::string &key, const std::string &text,
                 uint64_t &field);
void parseOption(const std::string &key, const std::string &text,
                 double &field);
void parseOption(const std::string &key, const std::string &text,
                 float &field);

} // namespace models

#endif
