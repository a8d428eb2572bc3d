//===- NpyFuzz.cpp - libFuzzer target: bytes to the .npy/.npz readers -----===//
//
// Feeds every input to each way `cellc run` and the Python package read
// arrays: npy::parse on the bytes in memory, npy::readFile on a memfd (a
// regular file, bounded by its size) and on a pipe (a stream, bounded by
// what its header declares), and npy::parseArchive as a .npz. Rejecting an
// input is fine. Bugs are
//   - a crash, a hang (-timeout), a sanitizer report, a leak or an
//     allocation over -rss_limit_mb/-malloc_limit_mb, and
//   - readers that disagree: the three .npy paths must accept the same
//     inputs and give the same array; every error must start with the name
//     it was given; an accepted float array must survive serialize() and
//     parse() unchanged.
// The last two abort with the input and the readers' answers printed, so
// libFuzzer keeps the input. scripts/fuzz.sh builds and runs it.
//
//===----------------------------------------------------------------------===//

#include "jit/Npy.h"
#include "jit/Npz.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

using namespace cellc;

namespace {

[[noreturn]] void fail(const std::string &what) {
  std::fprintf(stderr, "npy-fuzz: %s\n", what.c_str());
  std::abort();
}

void expectNamed(const std::string &error, const std::string &name) {
  if (!error.empty() && error.rfind(name + ": ", 0) != 0)
    fail("an error that does not start with '" + name + ": ': " + error);
}

bool sameArray(const npy::Array &a, const npy::Array &b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.ints == b.ints &&
         a.floats.size() == b.floats.size() &&
         (a.floats.empty() ||
          std::memcmp(a.floats.data(), b.floats.data(),
                      a.floats.size() * sizeof(float)) == 0);
}

/// The input as a regular file: one memfd, rewritten for each input.
std::string readAsRegularFile(const std::string &bytes, npy::Array &array) {
  static int fd = memfd_create("npy-fuzz", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, 0) != 0 ||
      pwrite(fd, bytes.data(), bytes.size(), 0) != ssize_t(bytes.size()) ||
      lseek(fd, 0, SEEK_SET) != 0)
    fail("cannot write the memfd");
  return npy::readFile(fd, "memfd.npy", array);
}

/// The input as a stream: a pipe holding all of it, its writer closed.
/// False when the pipe cannot take it all without a second thread.
bool readAsStream(const std::string &bytes, npy::Array &array,
                  std::string &error) {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0)
    fail("cannot make a pipe");
  fcntl(ends[1], F_SETPIPE_SZ, 1 << 20);
  fcntl(ends[1], F_SETFL, O_NONBLOCK);
  bool whole = bytes.empty() || write(ends[1], bytes.data(), bytes.size()) ==
                                    ssize_t(bytes.size());
  close(ends[1]);
  if (whole)
    error = npy::readFile(ends[0], "pipe.npy", array);
  close(ends[0]);
  return whole;
}

void checkNpy(const std::string &bytes) {
  npy::Array parsed, regular, streamed;
  std::string parseError = npy::parse(bytes, "bytes.npy", parsed);
  std::string regularError = readAsRegularFile(bytes, regular);
  expectNamed(parseError, "bytes.npy");
  expectNamed(regularError, "memfd.npy");
  if (parseError.empty() != regularError.empty())
    fail("parse says '" + parseError + "', the regular file '" + regularError +
         "'");
  std::string streamError;
  if (readAsStream(bytes, streamed, streamError)) {
    expectNamed(streamError, "pipe.npy");
    if (parseError.empty() != streamError.empty())
      fail("parse says '" + parseError + "', the stream '" + streamError + "'");
    if (streamError.empty() && !sameArray(parsed, streamed))
      fail("the stream read another array than parse");
  }
  if (!parseError.empty())
    return;
  if (!sameArray(parsed, regular))
    fail("the regular file read another array than parse");
  if (parsed.dtype != npy::DType::Float32)
    return;
  npy::Array again;
  std::string written =
      npy::serialize("<f4", parsed.shape, parsed.floats.data(), 4);
  if (std::string e = npy::parse(written, "again.npy", again); !e.empty())
    fail("its own serialization does not parse: " + e);
  if (!sameArray(parsed, again))
    fail("serialize and parse changed the array");
}

void checkNpz(const std::string &bytes) {
  std::map<std::string, npy::Array> arrays;
  expectNamed(npy::parseArchive(bytes, "bytes.npz", arrays), "bytes.npz");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  checkNpy(bytes);
  checkNpz(bytes);
  return 0;
}
