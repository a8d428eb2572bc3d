//===- TestFiles.cpp - Files and errors for the cws tests -----------------===//

#include "TestFiles.h"

#include <sys/stat.h>

namespace cws::test {

std::string sharedDataDir() {
  // CWS_SHARED_DATA overrides the build's default (a checkout elsewhere).
  const char *env = std::getenv("CWS_SHARED_DATA");
  std::string dir = env ? env : CWS_SHARED_DATA;
  struct stat info;
  std::string probe = dir + "/sighan2005-pku/pku_test_gold.utf8";
  return ::stat(probe.c_str(), &info) == 0 ? dir : "";
}

} // namespace cws::test
