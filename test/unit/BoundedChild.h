//===- BoundedChild.h - Run a test's call in a limited child process ------===//
//
// A reader that never stops (on /dev/zero, say) must fail its test, not hang
// it or take the machine's memory: the call runs in a forked child under an
// alarm and an address-space limit, and hands back its result as text.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_UNIT_BOUNDEDCHILD_H
#define CELLC_TEST_UNIT_BOUNDEDCHILD_H

#include <functional>
#include <optional>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

namespace cellc::test {

/// What `call()` returned, run in a child process limited to `seconds` and
/// `memoryBytes` of address space (no limit under ASan, which reserves
/// terabytes). nullopt: the child did not return (killed by the alarm, out
/// of memory, or an exception).
inline std::optional<std::string>
runBounded(const std::function<std::string()> &call, unsigned seconds,
           unsigned long memoryBytes) {
  int channel[2];
  if (pipe(channel) != 0)
    return std::nullopt;
  pid_t child = fork();
  if (child < 0)
    return std::nullopt;
  if (child == 0) {
    close(channel[0]);
#if !defined(__has_feature) || !__has_feature(address_sanitizer)
    rlimit memory = {memoryBytes, memoryBytes};
    setrlimit(RLIMIT_AS, &memory);
#endif
    alarm(seconds);
    try {
      std::string result = call();
      for (size_t at = 0; at < result.size();) {
        ssize_t wrote =
            write(channel[1], result.data() + at, result.size() - at);
        if (wrote <= 0)
          _exit(1);
        at += size_t(wrote);
      }
    } catch (...) {
      _exit(1); // std::bad_alloc at the limit
    }
    _exit(0); // no atexit handlers or gtest teardown in the child
  }
  close(channel[1]);
  std::string result;
  char buffer[4096];
  for (ssize_t got; (got = read(channel[0], buffer, sizeof buffer)) > 0;)
    result.append(buffer, size_t(got));
  close(channel[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return std::nullopt;
  return result;
}

} // namespace cellc::test

#endif // CELLC_TEST_UNIT_BOUNDEDCHILD_H
