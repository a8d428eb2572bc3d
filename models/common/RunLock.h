//===- models/common/RunLock.h - One writer per run -------------*- C++ -*-===//
//
// A training run writes OUT, OUT.best, their temporaries and its logs; two
// processes doing so at once lose one run's work (and a --resume started
// beside a live run would delete the live run's partial save). So a run
// holds an exclusive lock on OUT.lock for its whole life: flock(2), which
// the kernel releases when the process dies, so a run killed with -9 can be
// resumed at once. The file holds the holder's pid for the message a second
// writer gets; it is removed when the run ends normally.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_RUNLOCK_H
#define CELLC_MODELS_COMMON_RUNLOCK_H

#include <string>

namespace models {

class RunLock {
public:
  /// Locks `out`.lock for `program`'s run writing `out`. Throws DataError
  /// naming the holder's pid when another process holds it, or naming the
  /// file when it cannot be created.
  RunLock(const std::string &program, const std::string &out);
  ~RunLock();
  RunLock(const RunLock &) = delete;
  RunLock &operator=(const RunLock &) = delete;

  /// The lock file's path for a run writing `out`.
  static std::string pathFor(const std::string &out) { return out + ".lock"; }

private:
  std::string path;
  int fd = -1;
};

} // namespace models

#endif
