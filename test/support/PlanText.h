//===- PlanText.h - Plans written as text, for tests -----------*- C++ -*-===//
//
// Tests that pair hand-written kernels with a plan write the plan as the
// text cellc -emit=plan prints. The runtime never reads text: readPlanText
// gives the in-memory plan (validated by cellrt::validatePlan) and
// planTables the tables an image carries.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_SUPPORT_PLANTEXT_H
#define CELLC_TEST_SUPPORT_PLANTEXT_H

#include "cellrt/Plan.h"

#include <string_view>

namespace cellc_test {

/// Reads the text form and validates it. Syntax errors read `plan line N:
/// message`; the rules' errors are validatePlan's.
cellrt::Expected<cellrt::Plan> readPlanText(std::string_view text);

/// The tables of a plan written as text, for a cellrt_image's `plan`: the
/// pointer stays valid for the whole run. Aborts on a plan it cannot read.
const char *planTables(const char *text);

} // namespace cellc_test

#endif // CELLC_TEST_SUPPORT_PLANTEXT_H
