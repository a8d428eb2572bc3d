//===- TestFiles.cpp - Files and errors for the cws tests -----------------===//

#include "TestFiles.h"

#include "models/common/Math.h"

#include <sys/stat.h>

namespace cws::test {

namespace {

/// The models here are tiny: OpenMP threads would only wait for each other
/// (and for whatever else runs on the machine).
struct OneThread : testing::Environment {
  void SetUp() override { models::setThreads(1); }
};

[[maybe_unused]] testing::Environment *const oneThread =
    testing::AddGlobalTestEnvironment(new OneThread);

} // namespace

std::string sharedDataDir() {
  // CWS_SHARED_DATA overrides the build's default (a checkout elsewhere).
  const char *env = std::getenv("CWS_SHARED_DATA");
  std::string dir = env ? env : CWS_SHARED_DATA;
  struct stat info;
  std::string probe = dir + "/sighan2005-pku/pku_test_gold.utf8";
  return ::stat(probe.c_str(), &info) == 0 ? dir : "";
}

} // namespace cws::test
