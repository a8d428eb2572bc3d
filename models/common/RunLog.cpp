//===- models/common/RunLog.cpp - A training run's log files -------------===//

#include "models/common/RunLog.h"

#include "models/common/Data.h"

#include <cmath>
#include <ctime>
#include <iomanip>
#include <sstream>

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

/// Writes through to `target`, with the local time before every line.
class TimestampBuffer : public std::streambuf {
public:
  explicit TimestampBuffer(std::streambuf *target) : target(target) {}

protected:
  int overflow(int c) override {
    if (c == traits_type::eof())
      return traits_type::not_eof(c);
    if (atLineStart) {
      std::string stamp = localTimestamp() + " ";
      target->sputn(stamp.data(), std::streamsize(stamp.size()));
      atLineStart = false;
    }
    if (c == '\n')
      atLineStart = true;
    return target->sputc(char(c));
  }
  int sync() override { return target->pubsync(); }

private:
  std::streambuf *target;
  bool atLineStart = true;
};

} // namespace

RunLog::RunLog(const std::string &textPath, const std::string &eventPath)
    : textFile(textPath, std::ios::app), eventFile(eventPath, std::ios::app),
      start(std::chrono::steady_clock::now()) {
  if (!textFile)
    throw DataError(textPath + ": cannot open the log file");
  if (!eventFile)
    throw DataError(eventPath + ": cannot open the event log");
  timestamper = std::make_unique<TimestampBuffer>(textFile.rdbuf());
  timestamped = std::make_unique<std::ostream>(timestamper.get());
}

RunLog::~RunLog() { timestamped->flush(); }

void RunLog::event(const std::string &name,
                   const std::vector<std::pair<std::string, double>> &fields) {
  std::ostringstream line;
  line << std::setprecision(8) << "{\"time\": \"" << localTimestamp()
       << "\", \"seconds\": "
       << std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                        start)
              .count()
       << ", \"event\": \"" << name << "\"";
  for (const auto &[key, value] : fields) {
    line << ", \"" << key << "\": ";
    // JSON has no NaN or Infinity.
    if (std::isfinite(value))
      line << value;
    else
      line << "null";
  }
  eventFile << line.str() << "}\n";
  eventFile.flush();
}

} // namespace models
