//===- HandWrittenAtrTest.cpp - cellrt on a hand-written ATR, both ways ----===//
//
// A test double for what cellc emits for cells/atr.cell in training mode:
// the forward step kernel and its backward written by hand with the exact
// Kernel.h ABI, and the training plan with the backward directives of
// docs/plan-format.md. If this passes and the compiled image fails, the fault
// is in the compiler.
//
//===----------------------------------------------------------------------===//

#include "AtrCheck.h"
#include "test/support/AtrTrainingPlan.h"
#include "test/support/PlanText.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

using cellc_test::atrTrainingPlan;

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

/// h' = i * p + f * h with i = sigmoid(p + q), f = sigmoid(p - q).
/// Arguments: state:h seq:v0 (p) step:v1 (q) next:h out; dims: H I.
void atrStep(int64_t rowBegin, int64_t rowEnd, int64_t step,
             const int32_t *lengths, const int64_t *dims, float *const *ptrs,
             const int64_t *strides) {
  int64_t hidden = dims[0];
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    const float *h = ptrs[0] + row * strides[0];
    const float *p = ptrs[1] + row * strides[1];
    const float *q = ptrs[2] + row * strides[2];
    float *next = ptrs[3] + row * strides[3];
    float *out = ptrs[4] + row * strides[4];
    bool active = !lengths || step < lengths[row];
    for (int64_t j = 0; j < hidden; ++j) {
      if (!active) {
        next[j] = h[j];
        out[j] = 0.0f;
        continue;
      }
      float inputGate = sigmoid(p[j] + q[j]);
      float forgetGate = sigmoid(p[j] - q[j]);
      next[j] = inputGate * p[j] + forgetGate * h[j];
      out[j] = next[j];
    }
  }
}

/// The backward of atrStep; accumulates into dstate:h, seq:dv0 and step:dv1.
/// Arguments: state:h seq:v0 step:v1 dnext:h dout dstate:h seq:dv0 step:dv1.
/// An inactive row carried the state: dh += dnext only.
void atrStepBackward(int64_t rowBegin, int64_t rowEnd, int64_t step,
                     const int32_t *lengths, const int64_t *dims,
                     float *const *ptrs, const int64_t *strides) {
  int64_t hidden = dims[0];
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    auto at = [&](int i) { return ptrs[i] + row * strides[i]; };
    const float *h = at(0), *p = at(1), *q = at(2), *dnext = at(3),
                *dout = at(4);
    float *dh = at(5), *dp = at(6), *dq = at(7);
    if (lengths && step >= lengths[row]) {
      for (int64_t j = 0; j < hidden; ++j)
        dh[j] += dnext[j];
      continue;
    }
    for (int64_t j = 0; j < hidden; ++j) {
      float inputGate = sigmoid(p[j] + q[j]);
      float forgetGate = sigmoid(p[j] - q[j]);
      float g = dnext[j] + dout[j];
      float throughInput = g * p[j] * inputGate * (1.0f - inputGate);
      float throughForget = g * h[j] * forgetGate * (1.0f - forgetGate);
      dh[j] += g * forgetGate;
      dp[j] += g * inputGate + throughInput + throughForget;
      dq[j] += throughInput - throughForget;
    }
  }
}

const cellrt_kernel_fn atrKernels[] = {atrStep, atrStepBackward};
const char *const atrKernelNames[] = {"atr_step", "atr_step_backward"};

} // namespace

TEST(AtrNumericsTest, HandWrittenGradientsMatchLibTorchAutograd) {
  cellrt_image image = {cellc_test::planTables(atrTrainingPlan), atrKernels,
                        atrKernelNames, 2};
  cellrt_test::runAtrGradientCheck(image);
}

TEST(AtrNumericsTest, HandWrittenForwardMatchesLibTorch) {
  // forward() without a tape ignores the backward directives.
  cellrt_image image = {cellc_test::planTables(atrTrainingPlan), atrKernels,
                        atrKernelNames, 2};
  cellrt_test::runAtrCheck(image);
}
