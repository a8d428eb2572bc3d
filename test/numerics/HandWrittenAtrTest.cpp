//===- HandWrittenAtrTest.cpp - The executor on a hand-written ATR kernel -===//
//
// A test double for cellc's output: the ATR step kernel written by hand with
// the exact Kernel.h ABI, and the plan of docs/plan-format.md. If this passes
// and the compiled image fails, the fault is in the compiler.
//
//===----------------------------------------------------------------------===//

#include "AtrCheck.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

const char atrPlan[] = "cellc-plan 1\n"
                       "cell atr\n"
                       "dims H I\n"
                       "input x I\n"
                       "state h H\n"
                       "param Wx H I\n"
                       "param Wh H H\n"
                       "output H\n"
                       "buffer seq p H\n"
                       "buffer step q H\n"
                       "weight W0 Wx\n"
                       "weight W1 Wh\n"
                       "pre gemm seq:p W0 input:x\n"
                       "step gemm step:q W1 state:h\n"
                       "step kernel 0 seq:p step:q state:h next:h out\n";

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

/// Arguments: seq:p step:q state:h next:h out; dims: H I.
void atrStep(int64_t rowBegin, int64_t rowEnd, int64_t step,
             const int32_t *lengths, const int64_t *dims, float *const *ptrs,
             const int64_t *strides) {
  int64_t hidden = dims[0];
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    const float *p = ptrs[0] + row * strides[0];
    const float *q = ptrs[1] + row * strides[1];
    const float *h = ptrs[2] + row * strides[2];
    float *next = ptrs[3] + row * strides[3];
    float *out = ptrs[4] + row * strides[4];
    if (lengths && step >= lengths[row]) {
      for (int64_t j = 0; j < hidden; ++j) {
        next[j] = h[j];
        out[j] = 0.0f;
      }
      continue;
    }
    for (int64_t j = 0; j < hidden; ++j) {
      float inputGate = sigmoid(p[j] + q[j]);
      float forgetGate = sigmoid(p[j] - q[j]);
      next[j] = inputGate * p[j] + forgetGate * h[j];
      out[j] = next[j];
    }
  }
}

const cellrt_kernel_fn atrKernels[] = {atrStep};
const char *const atrKernelNames[] = {"atr_step"};

} // namespace

TEST(AtrNumericsTest, HandWrittenKernelMatchesLibTorch) {
  cellrt_image image = {atrPlan, atrKernels, atrKernelNames, 1};
  cellrt_test::runAtrCheck(image);
}
