//===- Compare.h - Error measures and verdicts of cellc-check ---*- C++ -*-===//

#ifndef CELLC_TOOLS_CELLC_CHECK_COMPARE_H
#define CELLC_TOOLS_CELLC_CHECK_COMPARE_H

#include <string>
#include <vector>

namespace cellc::check {

/// Tolerances on the relative error max|a-b| / max|b|: cellrt computes in
/// float32, the reference in float64.
inline constexpr double kForwardTolerance = 1e-4;
inline constexpr double kGradientTolerance = 1e-3;
/// Central differences against autograd, both float64.
inline constexpr double kFiniteDifferenceTolerance = 1e-5;
/// A gradient that is zero in exact arithmetic (exp(-softplus(m)) +
/// sigmoid(m) is 1 for every m) comes out of float32 as rounding noise of
/// the size of the terms that cancelled, ~1e-7 of the run's gradients, and
/// relative to its own ~1e-17 that is an error of 1e10. Gradients are
/// therefore measured against at least this fraction of the largest
/// gradient of the same run (so 1e-6 of it absolute at kGradientTolerance).
inline constexpr double kGradientFloorFraction = 1e-3;

/// One row of cellc-check's table.
struct Comparison {
  std::string array;
  double maxAbsError = 0;
  /// max|actual - expected| / max|expected| (the denominator is 1 when the
  /// expected array is all zeros, so an all-zero pair is exact).
  double maxRelError = 0;
  double tolerance = 0;
  bool pass = false;
  /// Why it failed beyond the numbers (size mismatch, NaN).
  std::string note;
};

/// Compares `actual` against `expected`; `scale`, if positive, replaces
/// max|expected| as the denominator (finite differences at a few
/// coordinates are measured against the whole gradient's magnitude);
/// `floor`, if positive, bounds the denominator from below, and the row
/// says when it did.
Comparison compareArrays(const std::string &array,
                         const std::vector<double> &actual,
                         const std::vector<double> &expected, double tolerance,
                         double scale = 0, double floor = 0);

/// The verdict of a row: relative error within tolerance and no NaN.
/// How much looser than float32 LibTorch the compiled cell may be before an
/// error counts: its kernels use polynomial exp/tanh and another order of
/// summation, so its rounding differs, but not by orders of magnitude.
inline constexpr double kConditioningFactor = 30;

/// compareArrays of `actual` against the float64 `expected`, where the
/// float32 evaluation of the same reference (`expectedSingle`) shows how
/// much this batch amplifies rounding (saturated gates, chaotic
/// recurrences). The tolerance becomes max(tolerance, kConditioningFactor x
/// the float32 reference's own error), and the row says when it widened.
/// `floor` as in compareArrays (gradients: kGradientFloorFraction of the
/// run's largest gradient).
Comparison compareConditioned(const std::string &array,
                              const std::vector<double> &actual,
                              const std::vector<double> &expected,
                              const std::vector<double> &expectedSingle,
                              double tolerance, double floor = 0);

/// How far the step-h difference quotient may be off, in units of its gap
/// to the step-2h one: an empirical margin, not a bound. Truncation error
/// alone puts it at a third of the gap (error ~ h^2). Rounding error ~ eps/h
/// puts it at twice the gap when the two quotients err the same way by r
/// and r/2; errors of other signs and sizes can exceed that, but then the
/// gap is large too. Seed 2465's cancelling layer norm came out at 1.01x
/// the gap on one machine.
inline constexpr double kStepGapFactor = 2;

/// Central differences (`numeric`, step h; `numericCoarse`, step 2h)
/// against autograd, relative to `scale`. A difference quotient is only as
/// good as its step allows: where the two steps disagree (a chaotic
/// recurrence makes the third derivative huge, or cancellation makes
/// rounding dominate), kStepGapFactor x their gap widens the tolerance, and
/// the row says so.
Comparison compareDifferences(const std::string &array,
                              const std::vector<double> &numeric,
                              const std::vector<double> &numericCoarse,
                              const std::vector<double> &analytic,
                              double tolerance, double scale);

bool verdict(double maxRelError, double tolerance);

/// `array  max abs  max rel  PASS|FAIL` with aligned columns.
std::string formatRow(const Comparison &row);
std::string formatHeader();

} // namespace cellc::check

#endif // CELLC_TOOLS_CELLC_CHECK_COMPARE_H
