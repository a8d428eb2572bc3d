//===- models/common/OptionMap.cpp - Options as key=value text ------------===//

#include "models/common/OptionMap.h"

#include "models/common/Data.h"

#include <sstream>

namespace models {

std::string optionText(const std::string &value) { return value; }
std::string optionText(bool value) { return value ? "1" : "0"; }
std::string optionText(int64_t value) { return std::to_string(value); }
std::string optionText(uint64_t value) { return std::to_string(value); }

std::string optionText(double value) {
  std::ostringstream s;
  s.precision(17);
  s << value;
  return s.str();
}

namespace {

/// The number `text` holds, all of it.
double number(const std::string &key, const std::string &text) {
  try {
    size_t used = 0;
    double x = std::stod(text, &used);
    if (used == text.size())
      return x;
  } catch (const std::exception &) {
  }
  throw DataError("--" + key + ": not a number: '" + text + "'");
}

} // namespace

void parseOption(const std::string &, const std::string &text,
                 std::string &field) {
  field = text;
}

void parseOption(const std::string &key, const std::string &text,
                 bool &field) {
  field = number(key, text) != 0;
}

void parseOption(const std::string &key, const std::string &text,
                 int64_t &field) {
  field = int64_t(number(key, text));
}

void parseOption(const std::string &key, const std::string &text,
                 uint64_t &field) {
  // Seeds use all 64 bits, more than a double holds.
  try {
    size_t used = 0;
    field = std::stoull(text, &used);
    if (used == text.size())
      return;
  } catch (const std::exception &) {
  }
  throw DataError("--" + key + ": not a whole number: '" + text + "'");
}

void parseOption(const std::string &key, const std::string &text,
                 double &field) {
  field = number(key, text);
}

void parseOption(const std::string &key, const std::string &text,
                 float &field) {
  field = float(number(key, text));
}

} // namespace models
