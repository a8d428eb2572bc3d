//===- models/common/RunLog.h - A training run's log files ------*- C++ -*-===//
//
// Two files a training run appends to: the text log (OUT.log), every line
// after its local time, for people; and a JSON-lines stream (OUT.jsonl),
// one object per logged update, validation and epoch, for plots:
//   {"time": "2026-11-23T06:20:01", "seconds": 12.5, "event": "update",
//    "epoch": 1, "update": 100, "loss": 2.31, ...}
// `seconds` counts from the RunLog's creation (this process).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_RUNLOG_H
#define CELLC_MODELS_COMMON_RUNLOG_H

#include <chrono>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace models {

class RunLog {
public:
  /// Opens both files for appending; DataError when either cannot be.
  RunLog(const std::string &textPath, const std::string &eventPath);
  ~RunLog();

  /// The text log: each line it is given starts with the time.
  std::ostream &text() { return *timestamped; }
  /// Appends {"time", "seconds", "event", then the fields} to the stream.
  void event(const std::string &name,
             const std::vector<std::pair<std::string, double>> &fields);

private:
  std::ofstream textFile, eventFile;
  std::unique_ptr<std::streambuf> timestamper;
  std::unique_ptr<std::ostream> timestamped;
  std::chrono::steady_clock::time_point start;
};

/// Local time as "2026-11-23T06:20:01".
std::string localTimestamp();

} // namespace models

#endif
