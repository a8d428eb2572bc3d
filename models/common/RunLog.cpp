//===- models/common/RunLog.cpp - A training run's log files -------------===//

#include "models/common/RunLog.h"

#include "models/common/Data.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <regex>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace models {

std::string localTimestamp() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local);
  return text;
}

namespace {

/// Writes through to `target`, with the local time before every line;
/// `failed` hears of a write that did not go through.
class TimestampBuffer : public std::streambuf {
public:
  TimestampBuffer(std::streambuf *target, std::function<void()> failed)
      : target(target), failed(std::move(failed)) {}

protected:
  int overflow(int c) override {
    if (c == traits_type::eof())
      return traits_type::not_eof(c);
    if (atLineStart) {
      std::string stamp = localTimestamp() + " ";
      if (target->sputn(stamp.data(), std::streamsize(stamp.size())) !=
          std::streamsize(stamp.size()))
        failed();
      atLineStart = false;
    }
    if (c == '\n')
      atLineStart = true;
    // The log's failures are warned about, never the caller's: a lost log
    // line must not stop training.
    if (target->sputc(char(c)) == traits_type::eof())
      failed();
    return c;
  }
  int sync() override {
    if (target->pubsync() != 0)
      failed();
    return 0;
  }

private:
  std::streambuf *target;
  std::function<void()> failed;
  bool atLineStart = true;
};

/// Whether `a` and `b` name one file (existing or to be made).
bool sameFile(const std::string &a, const std::string &b) {
  struct stat sa, sb;
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code errorA, errorB;
  auto canonicalA = std::filesystem::weakly_canonical(a, errorA);
  auto canonicalB = std::filesystem::weakly_canonical(b, errorB);
  return !errorA && !errorB && canonicalA == canonicalB;
}

/// The first bytes of `path` (at most 4 KiB).
std::string firstBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(4096, '\0');
  in.read(bytes.data(), std::streamsize(bytes.size()));
  bytes.resize(size_t(in.gcount()));
  return bytes;
}

/// Why the non-empty regular file starting with `bytes` is no log of the
/// kind `event` picks ("" when it is one).
std::string notALog(const std::string &bytes, bool event) {
  if (bytes.size() >= 30 &&
      bytes.compare(8, 21, "CELLC-NMT-CHECKPOINT-") == 0)
    return "a checkpoint";
  static const std::regex textLine("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:"
                                   "[0-9]{2}:[0-9]{2} ");
  bool isLog = event ? bytes.rfind("{\"time\": \"", 0) == 0
                     : std::regex_search(bytes.substr(0, 20), textLine);
  return isLog ? "" : "not a run's log (its first line is not one)";
}

} // namespace

void checkLogTarget(const std::string &path,
                    const std::vector<std::string> &runFiles, bool event) {
  for (const std::string &file : runFiles)
    if (!file.empty() && sameFile(path, file))
      throw DataError("the log " + path + " is " + file +
                      ", a file of this run: a log must be a file of its "
                      "own (choose another --log)");
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return;
  if (S_ISDIR(info.st_mode))
    throw DataError("the log " + path + " is a folder: name a file");
  if (!S_ISREG(info.st_mode) || info.st_size == 0)
    return;
  std::string why = notALog(firstBytes(path), event);
  if (!why.empty())
    throw DataError("the log " + path + " is " + why +
                    "; a run appends only to its logs: choose another --log");
}

namespace {

/// The number after `"key": ` in a JSON line, or -1.
int64_t field(const std::string &line, const std::string &key) {
  size_t at = line.find("\"" + key + "\": ");
  return at == std::string::npos
             ? -1
             : std::strtoll(line.c_str() + at + key.size() + 4, nullptr, 10);
}

/// Whether the event `line` came after a checkpoint of `epochsDone` epochs
/// and `updates` updates.
bool afterCheckpoint(const std::string &line, int64_t epochsDone,
                     int64_t updates) {
  // A process's options, when all it logged after them is dropped too: the
  // process resuming writes its own.
  if (line.find("\"event\": \"config\"") != std::string::npos)
    return field(line, "update") >= updates;
  if (field(line, "update") > updates)
    return true;
  return line.find("\"event\": \"epoch\"") != std::string::npos &&
         field(line, "epoch") > epochsDone;
}

} // namespace

void dropEventsAfter(const std::string &program, const std::string &eventPath,
                     int64_t epochsDone, int64_t updates) {
  checkLogTarget(eventPath, {}, true);
  struct stat info;
  if (::stat(eventPath.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return;
  std::ifstream in(eventPath, std::ios::binary);
  std::vector<std::pair<std::string, std::streamoff>> lines;
  std::string line;
  for (std::streamoff at = 0; std::getline(in, line);
       at += std::streamoff(line.size() + 1))
    lines.push_back({line, at});
  size_t keep = lines.size();
  while (keep > 0 && afterCheckpoint(lines[keep - 1].first, epochsDone,
                                     updates))
    --keep;
  if (keep == lines.size())
    return;
  std::streamoff end = keep < lines.size() ? lines[keep].second : 0;
  if (::truncate(eventPath.c_str(), off_t(end)) != 0)
    throw DataError(eventPath + ": cannot drop the events logged after the "
                                "checkpoint: " +
                    std::strerror(errno));
  std::fprintf(stderr,
               "%s: dropped %zu events at the end of %s that came after the "
               "checkpoint (this run logs them again)\n",
               program.c_str(), lines.size() - keep, eventPath.c_str());
}

RunLog::RunLog(const std::string &program, const std::string &textPath,
               const std::string &eventPath,
               const std::vector<std::string> &runFiles)
    : program(program), textPath(textPath), eventPath(eventPath),
      start(std::chrono::steady_clock::now()) {
  checkLogTarget(textPath, runFiles, false);
  checkLogTarget(eventPath, runFiles, true);
  textFile.open(textPath, std::ios::app);
  if (!textFile)
    throw DataError(textPath + ": cannot open the log file: " +
                    std::strerror(errno));
  eventFile.open(eventPath, std::ios::app);
  if (!eventFile)
    throw DataError(eventPath + ": cannot open the event log: " +
                    std::strerror(errno));
  timestamper = std::make_unique<TimestampBuffer>(
      textFile.rdbuf(), [this] { warnLost(this->textPath, errno); });
  timestamped = std::make_unique<std::ostream>(timestamper.get());
}

void RunLog::warnLost(const std::string &path, int error) {
  if (lostWrites)
    return;
  lostWrites = true;
  std::fprintf(stderr,
               "%s: warning: cannot write the log %s (%s); training goes "
               "on, but log lines are lost\n",
               program.c_str(), path.c_str(),
               error ? std::strerror(error) : "write failed");
}

RunLog::~RunLog() { timestamped->flush(); }

std::string RunLog::eventStart(const std::string &name) const {
  std::ostringstream line;
  line << std::setprecision(8) << "{\"time\": \"" << localTimestamp()
       << "\", \"seconds\": "
       << std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                        start)
              .count()
       << ", \"event\": \"" << name << "\"";
  return line.str();
}

void RunLog::writeEvent(const std::string &line) {
  eventFile << line << "}\n";
  eventFile.flush();
  if (!eventFile) {
    warnLost(eventPath, errno);
    eventFile.clear(); // a disk that frees up takes the next lines
  }
}

void RunLog::event(const std::string &name,
                   const std::vector<std::pair<std::string, double>> &fields) {
  std::ostringstream line;
  line << std::setprecision(8) << eventStart(name);
  for (const auto &[key, value] : fields) {
    line << ", \"" << key << "\": ";
    // JSON has no NaN or Infinity.
    if (std::isfinite(value))
      line << value;
    else
      line << "null";
  }
  writeEvent(line.str());
}

namespace {

std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += char(c);
    }
  }
  return out + "\"";
}

/// Whether `text` is a JSON number as it stands.
bool jsonNumber(const std::string &text) {
  static const std::regex number(
      "-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");
  return std::regex_match(text, number);
}

} // namespace

void RunLog::configEvent(int64_t update,
                         const std::map<std::string, std::string> &options) {
  // "update" comes before the options: dropEventsAfter reads the first.
  std::string line = eventStart("config") +
                     ", \"update\": " + std::to_string(update) +
                     ", \"options\": {";
  bool first = true;
  for (const auto &[key, value] : options) {
    line += (first ? "" : ", ") + jsonString(key) + ": " +
            (jsonNumber(value) ? value : jsonString(value));
    first = false;
  }
  writeEvent(line + "}");
}

} // namespace models
