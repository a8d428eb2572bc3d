//===- models/common/RunLog.cpp - A training run's log files -------------===//

#include "models/common/RunLog.h"

#include "models/common/Data.h"

#include "cellrt/Runtime.h"

#include <nlohmann/json.hpp>
#include <oneapi/dnnl/dnnl.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <filesystem>
#include <functional>
#include <regex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace models {

namespace {

/// The text log's lines and the console's: the local time with its offset
/// from UTC (ISO 8601, as localTimestamp), a space, the line.
constexpr const char *kLinePattern = "%Y-%m-%dT%H:%M:%S%z %v";

/// Hands each whole line written to it to `sink`, without its newline. The
/// drivers and the layers write their log lines through std::ostream
/// (saveOrWarn, the embeddings' coverage), spdlog takes whole messages.
class LineBuffer : public std::streambuf {
public:
  explicit LineBuffer(std::function<void(const std::string &)> sink)
      : sink(std::move(sink)) {}
  /// A last line without its newline is still logged.
  ~LineBuffer() override {
    if (!line.empty())
      sink(line);
  }

protected:
  int overflow(int c) override {
    if (c == traits_type::eof())
      return traits_type::not_eof(c);
    if (c == '\n') {
      sink(line);
      line.clear();
    } else {
      line += char(c);
    }
    return c;
  }

private:
  std::function<void(const std::string &)> sink;
  std::string line;
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
/// kind `event` picks ("" when it is one). Logs written before the time
/// had its zone (and before events were compact JSON) are logs too.
std::string notALog(const std::string &bytes, bool event) {
  if (bytes.size() >= 30 && bytes.compare(8, 21, "CELLC-NMT-CHECKPOINT-") == 0)
    return "a checkpoint";
  static const std::regex textLine(
      "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
      "([+-][0-9]{2}:?[0-9]{2}|Z)? ");
  static const std::regex eventLine("^\\{\"time\": ?\"");
  bool isLog =
      std::regex_search(bytes.substr(0, 40), event ? eventLine : textLine);
  return isLog ? "" : "not a run's log (its first line is not one)";
}

} // namespace

std::string localTimestamp() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S%z", &local);
  // strftime's %z is +0100; ISO 8601's extended form (spdlog's) +01:00.
  std::string stamp = text;
  stamp.insert(stamp.size() - 2, ":");
  return stamp;
}

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

/// The number `key` of an event, or -1 (absent, or not a number).
int64_t field(const nlohmann::json &event, const std::string &key) {
  auto found = event.find(key);
  return found != event.end() && found->is_number()
             ? int64_t(found->get<double>())
             : -1;
}

/// Whether the event `line` came after a checkpoint of `epochsDone` epochs
/// and `updates` updates.
bool afterCheckpoint(const std::string &line, int64_t epochsDone,
                     int64_t updates) {
  nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
  // A line cut short by the kill is the killed process's last, and would
  // stop every reader of the file.
  if (!event.is_object())
    return true;
  std::string name = event.value("event", "");
  // A process's options, when all it logged after them is dropped too: the
  // process resuming writes its own.
  if (name == "config")
    return field(event, "update") >= updates;
  if (field(event, "update") > updates)
    return true;
  return name == "epoch" && field(event, "epoch") > epochsDone;
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
  while (keep > 0 &&
         afterCheckpoint(lines[keep - 1].first, epochsDone, updates))
    --keep;
  if (keep == lines.size())
    return;
  std::streamoff end = keep < lines.size() ? lines[keep].second : 0;
  if (::truncate(eventPath.c_str(), off_t(end)) != 0)
    throw DataError(eventPath +
                    ": cannot drop the events logged after the "
                    "checkpoint: " +
                    std::strerror(errno));
  std::fprintf(stderr,
               "%s: dropped %zu events at the end of %s that came after the "
               "checkpoint (this run logs them again)\n",
               program.c_str(), lines.size() - keep, eventPath.c_str());
}

namespace {

/// The file sink of the text log at `path`, its lines after the time;
/// DataError when it cannot be opened.
spdlog::sink_ptr openTextLog(const std::string &path) {
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path);
    sink->set_pattern(kLinePattern);
    return sink;
  } catch (const spdlog::spdlog_ex &error) {
    throw DataError(path + ": cannot open the log file: " +
                    (errno ? std::strerror(errno) : error.what()));
  }
}

/// A logger writing to `sinks` that tells `lost` of a failed write: a lost
/// log line must not stop training.
std::shared_ptr<spdlog::logger>
makeLogger(const std::string &name, spdlog::sinks_init_list sinks,
           std::function<void(const std::string &)> lost) {
  auto logger = std::make_shared<spdlog::logger>(name, sinks);
  logger->set_level(spdlog::level::info);
  // Every line at once, as std::endl did: a killed run loses none.
  logger->flush_on(spdlog::level::info);
  logger->set_error_handler(std::move(lost));
  return logger;
}

/// A stream whose lines `logger` writes (LineBuffer).
std::unique_ptr<std::streambuf>
linesTo(const std::shared_ptr<spdlog::logger> &logger) {
  return std::make_unique<LineBuffer>([logger](const std::string &line) {
    // As text, never as a format string: a line may hold braces.
    logger->log(spdlog::level::info, spdlog::string_view_t(line));
  });
}

} // namespace

RunLog::RunLog(const std::string &program, const std::string &textPath,
               const std::string &eventPath,
               const std::vector<std::string> &runFiles)
    : program(program), textPath(textPath), eventPath(eventPath),
      start(std::chrono::steady_clock::now()) {
  checkLogTarget(textPath, runFiles, false);
  checkLogTarget(eventPath, runFiles, true);
  spdlog::sink_ptr file = openTextLog(textPath);
  eventFile.open(eventPath, std::ios::app);
  if (!eventFile)
    throw DataError(eventPath +
                    ": cannot open the event log: " + std::strerror(errno));
  auto console = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  console->set_pattern(kLinePattern);
  // errno is the failed write's: spdlog's message names the file, ours too.
  auto lost = [this](const std::string &) { warnLost(this->textPath, errno); };
  textLogger = makeLogger("text", {file}, lost);
  consoleLogger = makeLogger("summaries", {file, console}, lost);
  textLines = linesTo(textLogger);
  summaryLines = linesTo(consoleLogger);
  textStream = std::make_unique<std::ostream>(textLines.get());
  summaryStream = std::make_unique<std::ostream>(summaryLines.get());
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

// The streams go before their LineBuffers, which log a partial last line.
RunLog::~RunLog() = default;

EventFields RunLog::eventStart(const std::string &name) const {
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return {{"time", localTimestamp()}, {"seconds", seconds}, {"event", name}};
}

void RunLog::writeEvent(const EventFields &event) {
  // Invalid UTF-8 (a path in Latin-1) becomes U+FFFD rather than a thrown
  // type_error: a log line must never stop training.
  eventFile << event.dump(-1, ' ', false,
                          nlohmann::json::error_handler_t::replace)
            << '\n';
  eventFile.flush();
  if (!eventFile) {
    warnLost(eventPath, errno);
    eventFile.clear(); // a disk that frees up takes the next lines
  }
}

void RunLog::event(const std::string &name, const EventFields &fields) {
  EventFields event = eventStart(name);
  // nlohmann::json writes a NaN or an infinity as null.
  for (const auto &item : fields.items())
    event[item.key()] = item.value();
  writeEvent(event);
}

namespace {

/// Whether `text` is a JSON number as it stands.
bool jsonNumber(const std::string &text) {
  static const std::regex number(
      "-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");
  return std::regex_match(text, number);
}

/// The options as a JSON object: numbers as numbers (integers as
/// integers), other values as strings.
nlohmann::ordered_json
optionsObject(const std::map<std::string, std::string> &options) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  for (const auto &[key, value] : options)
    object[key] = jsonNumber(value) ? nlohmann::ordered_json::parse(value)
                                    : nlohmann::ordered_json(value);
  return object;
}

std::string hostName() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "";
}

/// The CPU's model name from /proc/cpuinfo ("" where it names none).
std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0)
      continue;
    size_t value = line.find_first_not_of(" \t", line.find(':') + 1);
    return value == std::string::npos ? "" : line.substr(value);
  }
  return "";
}

/// The threads OpenMP gives oneDNN's products, or 0 without OpenMP. The
/// runtime comes with oneDNN: looked up, as setThreads does, not linked.
int openMpThreads() {
  using GetFn = int (*)();
  auto get =
      reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  return get ? get() : 0;
}

std::string compilerVersion() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

std::string oneDnnVersion() {
  const dnnl_version_t *version = dnnl_version();
  return std::to_string(version->major) + "." + std::to_string(version->minor) +
         "." + std::to_string(version->patch);
}

} // namespace

nlohmann::ordered_json machineDescription() {
  int products = openMpThreads();
  return {{"host", hostName()},
          {"cpu", cpuModel()},
          {"cores", std::thread::hardware_concurrency()},
          {"threads", products > 0 ? nlohmann::ordered_json(products)
                                   : nlohmann::ordered_json()},
          {"kernel_threads", cellrt::getNumThreads()}};
}

nlohmann::ordered_json buildVersions() {
  return {{"cellc", CELLC_VERSION},
          {"compiler", compilerVersion()},
          {"onednn", oneDnnVersion()}};
}

void RunLog::configEvent(int64_t update,
                         const std::map<std::string, std::string> &options) {
  EventFields event = eventStart("config");
  event["update"] = update;
  event["options"] = optionsObject(options);
  event["machine"] = machineDescription();
  event["versions"] = buildVersions();
  writeEvent(event);
}

} // namespace models
