//===- AtrTrainingPlan.h - The plan cellc emits for cells/atr.cell -*- C++ -*-===//
//
// Shared by the runtime's parser tests and the hand-written ATR test double:
// kernel 0 is the forward step kernel, kernel 1 its backward.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_SUPPORT_ATRTRAININGPLAN_H
#define CELLC_TEST_SUPPORT_ATRTRAININGPLAN_H

namespace cellc_test {

inline constexpr char atrTrainingPlan[] =
    "cellc-plan 1\n"
    "cell atr\n"
    "dims H I\n"
    "input x I\n"
    "state h H\n"
    "param Wx H I\n"
    "param Wh H H\n"
    "output H\n"
    "buffer seq v0 H\n"
    "buffer step v1 H\n"
    "buffer seq dv0 H\n"
    "buffer step dv1 H\n"
    "weight W0 Wx\n"
    "weight W1 Wh\n"
    "pre gemm seq:v0 W0 input:x\n"
    "step gemm step:v1 W1 state:h\n"
    "step kernel 0 state:h seq:v0 step:v1 next:h out\n"
    "bstep kernel 1 state:h seq:v0 step:v1 dnext:h dout dstate:h seq:dv0 "
    "step:dv1\n"
    "bstep gemm dstate:h W1 step:dv1\n"
    "bpre gemm dinput:x W0 seq:dv0\n"
    "wgrad W1 step:dv1 state:h\n"
    "wgrad W0 seq:dv0 input:x\n";

} // namespace cellc_test

#endif // CELLC_TEST_SUPPORT_ATRTRAININGPLAN_H
