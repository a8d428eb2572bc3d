//===- models/common/Progress.h - Progress bars for long runs ---*- C++ -*-===//
//
// `label |#########       | 45% 1234 sent/s ETA 0:12 loss 0.531` on stderr,
// redrawn at most five times a second, only when stderr is a terminal (a
// log file or a pipe gets the drivers' line-per-epoch summaries instead).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_PROGRESS_H
#define CELLC_MODELS_COMMON_PROGRESS_H

#include <chrono>
#include <cstdint>
#include <string>

namespace models {

class ProgressBar {
public:
  /// `total` steps of work, `unit` names the items counted for the rate.
  /// Disabled when `enabled` is false or stderr is not a terminal.
  ProgressBar(std::string label, int64_t total, std::string unit,
              bool enabled = true);
  ~ProgressBar();

  /// `done` of `total` steps finished, `items` counted so far; `extra` is
  /// appended (e.g. "loss 0.531").
  void update(int64_t done, int64_t items, const std::string &extra = "");
  /// Ends the line (once).
  void finish();
  double elapsedSeconds() const;

private:
  using Clock = std::chrono::steady_clock;
  std::string label, unit;
  int64_t total;
  bool enabled, open = false;
  Clock::time_point start, lastDraw;
};

/// h:mm:ss or m:ss.
std::string formatDuration(double seconds);

} // namespace models

#endif
