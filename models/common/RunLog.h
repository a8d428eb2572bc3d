//===- models/common/RunLog.h - A training run's log files ------*- C++ -*-===//
//
// Two files a training run appends to: the text log (OUT.log), every line
// after its local time with the time zone (spdlog), for people; and a
// JSON-lines stream (OUT.jsonl), one object per logged update, validation
// and epoch (nlohmann::json), for plots:
//   {"time":"2026-11-23T06:20:01+01:00","seconds":12.5,"event":"update",
//    "epoch":1,"update":100,"loss":2.31,...}
// `seconds` counts from the RunLog's creation (this process). Each process
// of a run starts its events with a "config" event holding its options,
// the machine it runs on and the versions it was built with.
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

// Declarations only, keeping the library's header out of every file that
// includes this one: a file giving an event its fields includes
// nlohmann/json.hpp.
#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace spdlog {
class logger;
} // namespace spdlog

namespace models {

/// One event's fields, in the order written.
using EventFields = nlohmann::ordered_json;

class RunLog {
public:
  /// Opens both files for appending, for `program` (which starts its
  /// warnings). DataError when either cannot be, or is not a log (above),
  /// or is one of `runFiles`, the files of the run that a log must not be.
  RunLog(const std::string &program, const std::string &textPath,
         const std::string &eventPath,
         const std::vector<std::string> &runFiles = {});
  ~RunLog();

  /// The text log: each line it is given is written after the time.
  std::ostream &text() { return *textStream; }
  /// Lines for the console too (the model line, epoch summaries): each
  /// goes to the text log and, after the same time, to stderr, so that
  /// they are there also with --no-progress.
  std::ostream &summaries() { return *summaryStream; }

  /// Appends {"time", "seconds", "event", then `fields`} to the stream.
  /// Give counts as integers: they stay integers in the JSON. A NaN or an
  /// infinity is written as null (JSON has neither).
  void event(const std::string &name, const EventFields &fields);

  /// Appends {"time", "seconds", "event": "config", "update", "options":
  /// {KEY: VALUE, ...}, "machine": {...}, "versions": {...}}: the options
  /// this process trains with from update `update` on (0 for a new run),
  /// numbers as JSON numbers and other values as strings; the host, CPU,
  /// core and thread counts; and the cellc, compiler and oneDNN versions.
  /// Written first, before the process's other events, so that every run's
  /// settings are in its log.
  void configEvent(int64_t update,
                   const std::map<std::string, std::string> &options);

  /// Whether a write to either file failed (and was warned about).
  bool lost() const { return lostWrites; }

private:
  /// {"time": ..., "seconds": ..., "event": `name`}.
  EventFields eventStart(const std::string &name) const;
  void writeEvent(const EventFields &event);
  void warnLost(const std::string &path, int error);

  std::string program, textPath, eventPath;
  bool lostWrites = false;
  std::ofstream eventFile;
  std::shared_ptr<spdlog::logger> textLogger, consoleLogger;
  std::unique_ptr<std::streambuf> textLines, summaryLines;
  std::unique_ptr<std::ostream> textStream, summaryStream;
  std::chrono::steady_clock::time_point start;
};

/// Local time with its offset from UTC, as "2026-11-23T06:20:01+01:00"
/// (ISO 8601; the text log's lines start with it too).
std::string localTimestamp();

/// The "machine" and "versions" objects of the config event (configEvent).
nlohmann::ordered_json machineDescription();
nlohmann::ordered_json buildVersions();

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
