//===- models/common/Progress.cpp - Progress bars for long runs -----------===//

#include "models/common/Progress.h"

#include <algorithm>
#include <cstdio>
#include <unistd.h>

namespace models {

std::string formatDuration(double seconds) {
  long long s = (long long)std::max(0.0, seconds + 0.5);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600,
                  s / 60 % 60, s % 60);
  else
    std::snprintf(text, sizeof text, "%lld:%02lld", s / 60, s % 60);
  return text;
}

ProgressBar::ProgressBar(std::string label, int64_t total, std::string unit,
                         bool enabled)
    : label(std::move(label)), unit(std::move(unit)), total(total),
      enabled(enabled && isatty(2)), start(Clock::now()),
      lastDraw(start - std::chrono::seconds(1)) {}

ProgressBar::~ProgressBar() { finish(); }

double ProgressBar::elapsedSeconds() const {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void ProgressBar::update(int64_t done, int64_t items,
                         const std::string &extra) {
  if (!enabled || Clock::now() - lastDraw < std::chrono::milliseconds(200))
    return;
  lastDraw = Clock::now();
  double fraction = total > 0 ? std::min(1.0, double(done) / double(total)) : 1;
  double elapsed = elapsedSeconds();
  const int width = 24;
  std::string bar(size_t(fraction * width), '#');
  bar.resize(width, ' ');
  std::string eta =
      fraction > 0 ? formatDuration(elapsed / fraction - elapsed) : "?";
  std::fprintf(stderr, "\r%s |%s| %3.0f%% %.0f %s/s ETA %s %s  ",
               label.c_str(), bar.c_str(), fraction * 100,
               double(items) / std::max(elapsed, 1e-9), unit.c_str(),
               eta.c_str(), extra.c_str());
  open = true;
}

void ProgressBar::finish() {
  if (open)
    std::fprintf(stderr, "\n");
  open = false;
}

} // namespace models
