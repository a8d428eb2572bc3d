//===- Compare.cpp - Error measures and verdicts of cellc-check -----------===//

#include "tools/cellc-check/Compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace cellc::check;

bool cellc::check::verdict(double maxRelError, double tolerance) {
  // NaN compares false, so a NaN error fails.
  return maxRelError <= tolerance;
}

Comparison cellc::check::compareArrays(const std::string &array,
                                       const std::vector<double> &actual,
                                       const std::vector<double> &expected,
                                       double tolerance, double scale,
                                       double floor) {
  Comparison row;
  row.array = array;
  row.tolerance = tolerance;
  if (actual.size() != expected.size()) {
    row.maxAbsError = row.maxRelError = INFINITY;
    row.note = "sizes differ: " + std::to_string(actual.size()) + " vs " +
               std::to_string(expected.size());
    return row;
  }
  double maxExpected = 0;
  bool nan = false;
  for (size_t i = 0; i < actual.size(); ++i) {
    double difference = std::fabs(actual[i] - expected[i]);
    if (std::isnan(difference))
      nan = true;
    else
      row.maxAbsError = std::max(row.maxAbsError, difference);
    maxExpected = std::max(maxExpected, std::fabs(expected[i]));
  }
  // All zeros: the absolute error (or the floor, if larger).
  double denominator = scale > 0 ? scale : maxExpected > 0 ? maxExpected : 1;
  bool floored = !(scale > 0) && denominator < floor;
  if (floored)
    denominator = floor;
  row.maxRelError = nan ? NAN : row.maxAbsError / denominator;
  if (nan) {
    row.note = "NaN";
  } else if (floored) {
    char note[96];
    std::snprintf(note, sizeof note,
                  "near zero: relative to %.1e, not to its own %.1e", floor,
                  maxExpected);
    row.note = note;
  }
  row.pass = verdict(row.maxRelError, tolerance);
  return row;
}

Comparison cellc::check::compareConditioned(
    const std::string &array, const std::vector<double> &actual,
    const std::vector<double> &expected,
    const std::vector<double> &expectedSingle, double tolerance,
    double floor) {
  Comparison single =
      compareArrays(array, expectedSingle, expected, tolerance, 0, floor);
  Comparison row = compareArrays(array, actual, expected, tolerance, 0, floor);
  // NaN or sizes that differ (an infinite error) stay failures.
  bool broken = !std::isfinite(row.maxRelError);
  if (broken || std::isnan(single.maxRelError) ||
      kConditioningFactor * single.maxRelError <= tolerance)
    return row;
  row.tolerance = kConditioningFactor * single.maxRelError;
  row.pass = verdict(row.maxRelError, row.tolerance);
  char note[96];
  std::snprintf(note, sizeof note,
                "ill-conditioned: float32 LibTorch is off by %.1e",
                single.maxRelError);
  row.note = row.note.empty() ? note : row.note + "; " + note;
  return row;
}

Comparison cellc::check::compareDifferences(
    const std::string &array, const std::vector<double> &numeric,
    const std::vector<double> &numericCoarse,
    const std::vector<double> &analytic, double tolerance, double scale) {
  Comparison row = compareArrays(array, numeric, analytic, tolerance, scale);
  if (!row.note.empty() || numericCoarse.size() != numeric.size())
    return row;
  double gap = 0;
  for (size_t i = 0; i < numeric.size(); ++i)
    gap = std::max(gap, std::fabs(numeric[i] - numericCoarse[i]));
  double uncertainty = gap / (scale > 0 ? scale : 1.0);
  // Written so that a NaN gap keeps the bar.
  if (!(kStepGapFactor * uncertainty > tolerance))
    return row;
  row.tolerance = kStepGapFactor * uncertainty;
  row.pass = verdict(row.maxRelError, row.tolerance);
  char note[96];
  std::snprintf(note, sizeof note,
                "steps h and 2h differ by %.1e: differences uncertain",
                uncertainty);
  row.note = note;
  return row;
}

std::string cellc::check::formatHeader() {
  char line[160];
  std::snprintf(line, sizeof line, "  %-28s %12s %12s %10s  %s", "array",
                "max abs err", "max rel err", "tolerance", "verdict");
  return line;
}

std::string cellc::check::formatRow(const Comparison &row) {
  char line[256];
  std::snprintf(line, sizeof line, "  %-28s %12.3e %12.3e %10.0e  %s",
                row.array.c_str(), row.maxAbsError, row.maxRelError,
                row.tolerance, row.pass ? "PASS" : "FAIL");
  std::string text = line;
  if (!row.note.empty())
    text += " (" + row.note + ")";
  return text;
}
