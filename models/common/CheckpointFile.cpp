//===- models/common/CheckpointFile.cpp - Framed, checksummed files ------===//

#include "models/common/CheckpointFile.h"

#include "models/common/Data.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <unistd.h>

namespace models {

namespace {
const std::string magicPrefix = "CELLC-NMT-CHECKPOINT-";
const int currentVersion = 2;
// u64 magic length, the magic (prefix + one digit).
const size_t magicBytes = 8 + 22;
const size_t headerBytes = magicBytes + 16;

uint64_t readU64(const std::string &bytes, size_t at) {
  uint64_t x;
  std::memcpy(&x, bytes.data() + at, 8);
  return x;
}

void appendU64(std::string &bytes, uint64_t x) {
  bytes.append(reinterpret_cast<const char *>(&x), 8);
}

/// The format version of the file starting with `bytes` (which holds at
/// least magicBytes when it is a checkpoint at all).
int versionOf(const std::string &path, const std::string &bytes,
              const std::string &driver) {
  std::string article = driver == "nmt" || driver == "nli" ? "an " : "a ";
  if (bytes.empty())
    throw DataError(path + ": empty file, not " + article + driver +
                    " checkpoint");
  if (bytes.size() < magicBytes || readU64(bytes, 0) != 22 ||
      bytes.compare(8, magicPrefix.size(), magicPrefix) != 0)
    throw DataError(path + ": not " + article + driver + " checkpoint");
  char digit = bytes[magicBytes - 1];
  if (digit == '1' || digit == '2')
    return digit - '0';
  throw DataError(path + ": checkpoint format " + std::string(1, digit) +
                  " is newer than this " + driver + " reads (format " +
                  std::to_string(currentVersion) + ")");
}

/// The first `limit` bytes of `path` (0: all of them).
std::string readBytes(const std::string &path, size_t limit) {
  // A folder opens, and then claims a size that no string can hold.
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    throw DataError(path + " is a folder, not a checkpoint: name the "
                           "checkpoint file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw DataError(path +
                    ": cannot open the checkpoint: " + std::strerror(errno));
  if (limit == 0) {
    // One read of the file's size: a checkpoint with Adam's moments is
    // ~84 MB at the Multi30k recipe's width, and reading it a character at
    // a time took a quarter of a one-sentence `nmt translate`.
    in.seekg(0, std::ios::end);
    std::streamoff size = in.tellg();
    in.seekg(0, std::ios::beg);
    if (size < 0 || !in) {
      // A pipe has no size (and refused the seeks, which read nothing).
      in.clear();
      return std::string(std::istreambuf_iterator<char>(in),
                         std::istreambuf_iterator<char>());
    }
    limit = size_t(size);
  }
  std::string bytes(limit, '\0');
  in.read(bytes.data(), std::streamsize(limit));
  bytes.resize(size_t(in.gcount()));
  return bytes;
}

[[noreturn]] void failWrite(const std::string &temp, int fd,
                            const std::string &what) {
  std::string reason = std::strerror(errno);
  if (fd >= 0)
    ::close(fd);
  std::remove(temp.c_str());
  throw DataError(temp + ": " + what + ": " + reason);
}
} // namespace

uint64_t fnv1a64(const std::string &bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 1099511628211ull;
  }
  return hash;
}

CheckpointBytes readCheckpointFile(const std::string &path,
                                   const std::string &driver) {
  std::string bytes = readBytes(path, 0);
  CheckpointBytes result;
  result.version = versionOf(path, bytes, driver);
  if (result.version == 1) {
    bytes.erase(0, magicBytes);
    result.payload = std::move(bytes);
    return result;
  }
  if (bytes.size() < headerBytes)
    throw DataError(path + ": truncated checkpoint (" +
                    std::to_string(bytes.size()) + " bytes, no full header)");
  uint64_t size = readU64(bytes, magicBytes);
  uint64_t checksum = readU64(bytes, magicBytes + 8);
  if (bytes.size() - headerBytes != size)
    throw DataError(path + ": truncated or damaged checkpoint (" +
                    std::to_string(bytes.size() - headerBytes) +
                    " payload bytes, the header says " + std::to_string(size) +
                    ")");
  bytes.erase(0, headerBytes);
  result.payload = std::move(bytes);
  if (fnv1a64(result.payload) != checksum)
    throw DataError(path + ": checksum mismatch: the checkpoint is corrupt "
                           "(bit flips or a damaged copy)");
  return result;
}

uint64_t peekRunId(const std::string &path, const std::string &driver) {
  std::string bytes = readBytes(path, headerBytes + 8);
  if (versionOf(path, bytes, driver) == 1)
    return 0;
  if (bytes.size() < headerBytes + 8)
    throw DataError(path + ": truncated checkpoint");
  return readU64(bytes, headerBytes);
}

void writeCheckpointFile(const std::string &path, const std::string &payload) {
  std::string bytes;
  appendU64(bytes, 22);
  bytes += magicPrefix + std::to_string(currentVersion);
  appendU64(bytes, payload.size());
  appendU64(bytes, fnv1a64(payload));
  bytes += payload;

  std::string temp = path + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    failWrite(temp, fd, "cannot write the checkpoint");
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      failWrite(temp, fd, "writing the checkpoint failed");
    done += size_t(n);
  }
  // Without fsync a power loss after the rename can leave an empty file.
  if (::fsync(fd) != 0)
    failWrite(temp, fd, "writing the checkpoint failed");
  if (::close(fd) != 0)
    failWrite(temp, -1, "writing the checkpoint failed");
  if (std::rename(temp.c_str(), path.c_str()) != 0)
    failWrite(temp, -1, "cannot rename it to " + path);
}

} // namespace models
