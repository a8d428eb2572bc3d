//===- models/common/RunLog.h - A training run's log files ------*- C++ -*-===//
//
// Two files a training run appends to: the text log (OUT.log), every line
// after its local time, for people; and a JSON-lines stream (OUT.jsonl),
// one object per logged update, validation and epoch, for plots:
//   {"time": "2026-11-23T06:20:01", "seconds": 12.5, "event": "update",
//    "epoch": 1, "update": 100, "loss": 2.31, ...}
// `seconds` counts from the RunLog's creation (this process). Each process
// of a run starts its events with a "config" event holding its options.
//
// A log only ever appends to a log: a new or empty file, a device or pipe
// (/dev/null, /dev/stderr), or a file whose first line is a run log's. It
// is never one of the run's own files (checkpoints, their temporaries, the
// lock, the data), nor any other file: naming one is an error before
// training starts. A log that cannot be written (/dev/full, a full disk) is
// warned about once on stderr; training goes on.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_RUNLOG_H
#define CELLC_MODELS_COMMON_RUNLOG_H

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace models {

class RunLog {
public:
  /// Opens both files for appending, for `program` (which starts its
  /// warnings). DataError when either cannot be, or is not a log (above),
  /// or is one of `runFiles`, the files of the run that a log must not be.
  RunLog(const std::string &program, const std::string &textPath,
         const std::string &eventPath,
         const std::vector<std::string> &runFiles = {});
  ~RunLog();

  /// The text log: each line it is given starts with the time.
  std::ostream &text() { return *timestamped; }
  /// Appends {"time", "seconds", "event", then the fields} to the stream.
  void event(const std::string &name,
             const std::vector<std::pair<std::string, double>> &fields);

  /// Appends {"time", "seconds", "event": "config", "update", "options":
  /// {KEY: VALUE, ...}}: the options this process trains with from update
  /// `update` on (0 for a new run), so that every run's settings are in
  /// its log. Written first, before the process's other events; numbers as
  /// JSON numbers, other values as strings.
  void configEvent(int64_t update,
                   const std::map<std::string, std::string> &options);

  /// Whether a write to either file failed (and was warned about).
  bool lost() const { return lostWrites; }

private:
  /// The start of an event's line: {"time": ..., "seconds": ..., "event".
  std::string eventStart(const std::string &name) const;
  void writeEvent(const std::string &line);
  void warnLost(const std::string &path, int error);

  std::string program, textPath, eventPath;
  bool lostWrites = false;
  std::ofstream textFile, eventFile;
  std::unique_ptr<std::streambuf> timestamper;
  std::unique_ptr<std::ostream> timestamped;
  std::chrono::steady_clock::time_point start;
};

/// Local time as "2026-11-23T06:20:01".
std::string localTimestamp();

/// A resumed run redoes, bit for bit, what its killed predecessor did after
/// the checkpoint's save (updates, validations, an epoch's end), and logs
/// it again. So that OUT.jsonl has each event once, this drops the events
/// at the end of `eventPath` that came after a checkpoint of `epochsDone`
/// epochs and `updates` updates (an "epoch" event of a later epoch, any
/// event of a later update), saying so on stderr. Only for the run's own
/// log, resumed: the file must be a log (checkLogTarget).
void dropEventsAfter(const std::string &program, const std::string &eventPath,
                     int64_t epochsDone, int64_t updates);

/// Throws DataError unless `path` may be a log (RunLog above): `runFiles`
/// are the run's files; `event` picks the JSON-lines log's first line.
void checkLogTarget(const std::string &path,
                    const std::vector<std::string> &runFiles, bool event);

} // namespace models

#endif
