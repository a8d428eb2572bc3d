//===- models/common/RunLock.cpp - One writer per run ---------------------===//

#include "models/common/RunLock.h"

#include "models/common/Data.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace models {

namespace {

std::string folderOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Makes `folder` and its missing parents, as mkdir -p.
void makeFolders(const std::string &folder) {
  struct stat info;
  if (::stat(folder.c_str(), &info) == 0)
    return;
  std::string parent = folderOf(folder);
  if (parent != folder)
    makeFolders(parent);
  if (::mkdir(folder.c_str(), 0777) != 0 && errno != EEXIST)
    throw DataError("--out " + folder + ": cannot create the folder: " +
                    std::strerror(errno));
}

/// Refuses, before any training, an --out the final save could not write.
void checkOutput(const std::string &program, const std::string &out) {
  if (out.empty())
    throw DataError("--out is empty: name the checkpoint file to write");
  struct stat info;
  if (out.back() == '/' ||
      (::stat(out.c_str(), &info) == 0 && S_ISDIR(info.st_mode)))
    throw DataError("--out " + out +
                    " is a folder: name a file in it, e.g. " + out +
                    (out.back() == '/' ? "" : "/") + "model.ckpt");
  std::string folder = folderOf(out);
  if (::stat(folder.c_str(), &info) != 0) {
    makeFolders(folder);
    std::fprintf(stderr, "%s: created the folder %s for --out\n",
                 program.c_str(), folder.c_str());
  } else if (!S_ISDIR(info.st_mode)) {
    throw DataError("--out " + out + ": " + folder + " is not a folder");
  }
  if (::access(folder.c_str(), W_OK) != 0)
    throw DataError("--out " + out + ": cannot write in " + folder + ": " +
                    std::strerror(errno));
}

/// The pid a lock file records ("" when it records none).
std::string holderOf(int fd) {
  char text[32] = {};
  ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid = n > 0 ? std::string(text, size_t(n)) : "";
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' '))
    pid.pop_back();
  return pid;
}

/// Whether `fd` is still the file at `path`: a lock on a file that a
/// finishing run has just unlinked locks nothing.
bool stillAt(int fd, const std::string &path) {
  struct stat open, named;
  return ::fstat(fd, &open) == 0 && ::stat(path.c_str(), &named) == 0 &&
         open.st_dev == named.st_dev && open.st_ino == named.st_ino;
}

} // namespace

RunLock::RunLock(const std::string &program, const std::string &out)
    : path(pathFor(out)) {
  checkOutput(program, out);
  for (;;) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw DataError(path + ": cannot create the run's lock file: " +
                      std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int error = errno;
      std::string pid = holderOf(fd);
      ::close(fd);
      fd = -1;
      if (error != EWOULDBLOCK)
        throw DataError(path + ": cannot lock: " + std::strerror(error));
      throw DataError(
          out + " is being written by another run (" +
          (pid.empty() ? std::string("its") : "process " + pid + ", its") +
          " lock is " + path +
          "); wait for it to end, or choose another --out");
    }
    if (stillAt(fd, path))
      break;
    ::close(fd);
  }
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) != ssize_t(pid.size()))
    std::fprintf(stderr, "%s: warning: %s: cannot record the pid: %s\n",
                 program.c_str(), path.c_str(), std::strerror(errno));
}

RunLock::~RunLock() {
  if (fd < 0)
    return;
  // Unlinked while still held: a run that opens the old file now finds it
  // gone after locking it (stillAt) and locks a new one.
  ::unlink(path.c_str());
  ::close(fd);
}

} // namespace models
