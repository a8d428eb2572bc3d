//===- TestFiles.h - Files and errors for the cws tests ---------*- C++ -*-===//

#ifndef CELLC_TEST_MODELS_CWS_TESTFILES_H
#define CELLC_TEST_MODELS_CWS_TESTFILES_H

#include "models/common/Data.h"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>

namespace cws::test {

/// Writes TempDir()/cws-NAME and returns its path.
inline std::string writeFile(const std::string &name, const std::string &text) {
  std::string path = testing::TempDir() + "cws-" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

/// The message of the DataError `fn` throws, or "" when it throws none.
inline std::string errorOf(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const models::DataError &error) {
    return error.what();
  }
  return "";
}

/// Where the real corpora are (../shared/data/cws from the source tree), or
/// "" when they are absent.
std::string sharedDataDir();

} // namespace cws::test

#endif
