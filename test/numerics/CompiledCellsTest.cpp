//===- CompiledCellsTest.cpp - Every cells/*.cell against its paper -------===//
//
// The objects and headers come from `cellc cells/NAME.cell` at build time, so
// each test checks the whole pipeline (front end, passes, kernel lowering,
// plan, object emission, runtime executor) against a LibTorch reference
// written from the published equations (References.cpp). The gradient tests
// skip until the compiler emits backward plans and turn on by themselves.
//
//===----------------------------------------------------------------------===//

#include "CellCheck.h"
#include "References.h"

#include "atr.h"
#include "gru.h"
#include "lau.h"
#include "lstm.h"
#include "ran.h"
#include "rnn.h"
#include "srnmt.h"
#include "sru.h"

#include <gtest/gtest.h>

#include <iostream>

using namespace cellc_test;

namespace {

void forward(const cellrt_image &image, const Reference &reference) {
  CellCheckReport report =
      checkCellForward(image, reference, defaultCellSizes(reference));
  std::cout << "[ " << reference.cell << " forward ] " << report.str() << "\n";
  ::testing::Test::RecordProperty("max_relative_error_output",
                                  std::to_string(report.output));
  ::testing::Test::RecordProperty("max_relative_error_final_states",
                                  std::to_string(report.finalStates));
}

void gradients(const cellrt_image &image, const Reference &reference) {
  if (!imageHasBackward(image))
    GTEST_SKIP() << "cellc's " << reference.cell
                 << " object has no backward plan yet";
  CellCheckReport report =
      checkCellGradients(image, reference, defaultCellSizes(reference));
  std::cout << "[ " << reference.cell << " gradients ] " << report.str()
            << "\n";
  ::testing::Test::RecordProperty("max_relative_error_input_gradients",
                                  std::to_string(report.inputGradients));
  ::testing::Test::RecordProperty("max_relative_error_param_gradients",
                                  std::to_string(report.paramGradients));
}

} // namespace

// The same tests run on the cells compiled with different options
// (test/numerics/CMakeLists.txt sets the suite's name).
#ifndef CELLC_TEST_SUITE
#define CELLC_TEST_SUITE CompiledCells
#endif

#define CELL_TESTS(Name, name)                                                 \
  TEST(CELLC_TEST_SUITE, Name##Forward) {                                      \
    forward(cellc_##name##_image(), name##Reference());                        \
  }                                                                            \
  TEST(CELLC_TEST_SUITE, Name##Gradients) {                                    \
    gradients(cellc_##name##_image(), name##Reference());                      \
  }

CELL_TESTS(Atr, atr)
CELL_TESTS(Gru, gru)
CELL_TESTS(Lstm, lstm)
CELL_TESTS(Ran, ran)
CELL_TESTS(Lau, lau)
CELL_TESTS(Sru, sru)
CELL_TESTS(Srnmt, srnmt)
CELL_TESTS(Rnn, rnn)
