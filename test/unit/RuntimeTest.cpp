//===- RuntimeTest.cpp - Unit tests of cellrt's plan and executor ---------===//

#include "cellrt/Runtime.h"
#include "runtime/Parallel.h"
#include "test/support/AtrTrainingPlan.h"
#include "test/support/PlanText.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <functional>
#include <random>
#include <sched.h>
#include <thread>

using namespace cellrt;

namespace {

/// docs/plan-format.md's example.
const char *const atrPlan = "cellc-plan 1\n"
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

/// Exercises stacked weights, column offsets and vector params.
const char *const linearPlan =
    "cellc-plan 1\n"
    "cell lin\n"
    "dims H I\n"
    "input x I\n"
    "state h H\n"
    "param A H I\n"
    "param B H I\n"
    "param U H H\n"
    "param b H\n"
    "output H\n"
    "buffer seq ab 2*H\n"
    "buffer step q 2*H+1\n"
    "weight W0 A B\n"
    "weight W1 U\n"
    "pre gemm seq:ab W0 input:x\n"
    "step gemm step:q+H W1 state:h\n"
    "step kernel 0 seq:ab seq:ab+H param:b step:q+H state:h next:h out\n";

/// linearPlan plus its backward pass: stacked weights, column offsets and a
/// vector param's gradient (pgrad).
const char *const linearTrainingPlan =
    "cellc-plan 1\n"
    "cell lin\n"
    "dims H I\n"
    "input x I\n"
    "state h H\n"
    "param A H I\n"
    "param B H I\n"
    "param U H H\n"
    "param b H\n"
    "output H\n"
    "buffer seq ab 2*H\n"
    "buffer step q 2*H+1\n"
    "buffer seq dab 2*H\n"
    "buffer step dq H\n"
    "weight W0 A B\n"
    "weight W1 U\n"
    "pre gemm seq:ab W0 input:x\n"
    "step gemm step:q+H W1 state:h\n"
    "step kernel 0 seq:ab seq:ab+H param:b step:q+H state:h next:h out\n"
    "bstep kernel 1 dnext:h dout dstate:h seq:dab seq:dab+H step:dq\n"
    "bstep gemm dstate:h W1 step:dq\n"
    "bpre gemm dinput:x W0 seq:dab\n"
    "wgrad W0 seq:dab input:x\n"
    "wgrad W1 step:dq state:h\n"
    "pgrad b seq:dab\n";

using cellc_test::atrTrainingPlan;

std::string replaceOnce(std::string text, const std::string &from,
                        const std::string &to) {
  size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos)
    text.replace(pos, from.size(), to);
  return text;
}

std::string parseError(const std::string &text) {
  Expected<Plan> plan = cellc_test::readPlanText(text);
  EXPECT_FALSE(plan.ok()) << "parsed:\n" << text;
  return plan.ok() ? "" : plan.error();
}

/// Expects the parser to refuse `text` with an error that contains
/// `fragment`.
void expectRefusedWith(const std::string &text, const std::string &fragment) {
  std::string error = parseError(text);
  EXPECT_NE(error.find(fragment), std::string::npos)
      << "error: " << error << "\nwanted: " << fragment;
}

} // namespace

//===----------------------------------------------------------------------===//
// Parsing and printing
//===----------------------------------------------------------------------===//

TEST(PlanTest, ParsesDocumentedExample) {
  Expected<Plan> plan = cellc_test::readPlanText(atrPlan);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->cellName, "atr");
  EXPECT_EQ(plan->dims, (std::vector<std::string>{"H", "I"}));
  ASSERT_EQ(plan->inputs.size(), 1u);
  EXPECT_EQ(plan->inputs[0].length.str(), "I");
  ASSERT_EQ(plan->params.size(), 2u);
  EXPECT_TRUE(plan->params[1].isMatrix());
  EXPECT_EQ(plan->outputWidth.str(), "H");
  ASSERT_EQ(plan->operations.size(), 3u);
  const Operation &pre = plan->operations[0];
  EXPECT_EQ(pre.phase, Phase::Pre);
  EXPECT_EQ(pre.kind, Operation::Kind::Gemm);
  EXPECT_EQ(pre.weight, "W0");
  EXPECT_EQ(pre.gemmOutput().str(), "seq:p");
  EXPECT_EQ(pre.gemmInput().str(), "input:x");
  EXPECT_EQ(pre.line, 13);
  const Operation &kernel = plan->operations[2];
  EXPECT_EQ(kernel.kernel, 0);
  ASSERT_EQ(kernel.operands.size(), 5u);
  EXPECT_EQ(kernel.operands[4].kind, Ref::Kind::Out);
  EXPECT_EQ(plan->numKernelsUsed(), 1);
}

// `probe NAME LEN` (cellc --probe): the kernels' `out` rows hold the output
// and then every probe.
TEST(PlanTest, ProbesWidenTheKernelsOutRows) {
  std::string text =
      replaceOnce(atrPlan, "output H\n", "output H\nprobe i H\nprobe h' 2*H\n");
  Expected<Plan> plan = cellc_test::readPlanText(text);
  ASSERT_TRUE(plan.ok()) << plan.error();
  ASSERT_EQ(plan->probes.size(), 2u);
  EXPECT_EQ(plan->probes[1].name, "h'");
  EXPECT_EQ(plan->outputWidth.str(), "H");
  EXPECT_EQ(plan->kernelOutputWidth().str(), "4*H");
  EXPECT_EQ(plan->arrayWidth(plan->operations[2].operands[4]).str(), "4*H");
  EXPECT_EQ(printPlan(*plan), text);
  expectRefusedWith(replaceOnce(atrPlan, "output H\n", "probe i H\noutput H\n"),
                    "'probe' must follow 'output'");
  expectRefusedWith(replaceOnce(text, "probe h' 2*H", "probe i H"),
                    "declared twice");
  expectRefusedWith(replaceOnce(text, "probe h' 2*H", "probe h'' H"),
                    "expected a name");
}

TEST(PlanTest, PrintsWhatItParsed) {
  for (const char *text : {atrPlan, linearPlan}) {
    Expected<Plan> plan = cellc_test::readPlanText(text);
    ASSERT_TRUE(plan.ok()) << plan.error();
    EXPECT_EQ(printPlan(*plan), text);
    Expected<Plan> again = cellc_test::readPlanText(printPlan(*plan));
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(printPlan(*again), text);
  }
}

TEST(PlanTest, ParsesOffsetsAndWidths) {
  Expected<Plan> plan = cellc_test::readPlanText(linearPlan);
  ASSERT_TRUE(plan.ok()) << plan.error();
  const Operation &kernel = plan->operations[2];
  EXPECT_EQ(kernel.operands[1].name, "ab");
  EXPECT_EQ(kernel.operands[1].column.str(), "H");
  EXPECT_EQ(plan->arrayWidth(kernel.operands[1]).str(), "2*H");
  EXPECT_EQ(plan->arrayWidth(kernel.operands[3]).str(), "2*H+1");
  EXPECT_EQ(plan->arrayWidth(kernel.operands[2]).str(), "H");
  const WeightDecl &stacked = plan->weights[0];
  EXPECT_EQ(plan->weightRows(stacked).str(), "2*H");
  EXPECT_EQ(plan->weightCols(stacked).str(), "I");
}

TEST(PlanTest, CanonicalisesExpressionsAndToleratesBlankLines) {
  std::string text =
      replaceOnce(linearPlan, "buffer step q 2*H+1", "buffer step q 1+H+H");
  text = replaceOnce(text, "cell lin\n", "cell lin\n\n");
  Expected<Plan> plan = cellc_test::readPlanText(text);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(printPlan(*plan), linearPlan);
}

TEST(PlanErrorTest, MissingBufferDeclaration) {
  std::string text = replaceOnce(atrPlan, "buffer seq p H\n", "");
  EXPECT_EQ(parseError(text),
            "plan line 12: unknown buffer 'p' in 'seq:p' (missing 'buffer seq "
            "p LEN'?)");
}

TEST(PlanErrorTest, Header) {
  EXPECT_EQ(parseError(""), "plan: empty (expected 'cellc-plan 1')");
  EXPECT_EQ(parseError("cell atr\n"),
            "plan line 1: expected 'cellc-plan 1' as the first line, got "
            "'cell atr'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "cellc-plan 1", "cellc-plan 2")),
            "plan line 1: unsupported plan version 'cellc-plan 2' (this "
            "runtime reads 'cellc-plan 1')");
}

// `precision` is optional (f32), printed only for bf16, and read back.
TEST(PlanTest, Precision) {
  Expected<Plan> f32 = cellc_test::readPlanText(atrPlan);
  ASSERT_TRUE(f32.ok()) << f32.error();
  EXPECT_EQ(f32->precision, Precision::F32);
  std::string text =
      replaceOnce(atrPlan, "cell atr\n", "cell atr\nprecision bf16\n");
  Expected<Plan> bf16 = cellc_test::readPlanText(text);
  ASSERT_TRUE(bf16.ok()) << bf16.error();
  EXPECT_EQ(bf16->precision, Precision::BF16);
  EXPECT_EQ(printPlan(*bf16), text);
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "cell atr\n",
                                   "cell atr\nprecision fp16\n")),
            "plan line 3: 'precision' takes f32 or bf16, got 'fp16'");
  EXPECT_EQ(parseError(replaceOnce(text, "precision bf16\n",
                                   "precision bf16\nprecision f32\n")),
            "plan line 4: 'precision' appears twice");
}

TEST(PlanErrorTest, Syntax) {
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "input x I", "inpt x I")),
            "plan line 4: unknown directive 'inpt'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "input x I", "input x  I")),
            "plan line 4: tokens must be separated by single spaces");
  EXPECT_EQ(
      parseError(replaceOnce(atrPlan, "input x I", "input x")),
      "plan line 4: 'input' takes 2 operands (input NAME LEN [written]), got "
      "'input x'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "param Wx H I", "param Wx H 3*")),
            "plan line 6: malformed dimension expression '3*'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "param Wx H I", "param Wx H J")),
            "plan: unknown dimension 'J' in param 'Wx' (declare it in 'dims' "
            "first)");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "state:h next:h", "state:h nxt:h")),
            "plan line 15: unknown reference kind 'nxt' in 'nxt:h'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "kernel 0", "kernel -1")),
            "plan line 15: kernel index must be a non-negative integer, got "
            "'-1'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "seq:p step:q", "seq:p+ step:q")),
            "plan line 15: missing column offset after '+' in 'seq:p+'");
  EXPECT_EQ(
      parseError(replaceOnce(atrPlan, "buffer step q H", "buffer scratch q H")),
      "plan line 10: buffer extent must be 'seq' or 'step', got "
      "'scratch'");
}

TEST(PlanErrorTest, Declarations) {
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "param Wh H H",
                                   "param Wh H H\nparam Wx H")),
            "plan: param 'Wx' is declared twice");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "output H\n", "")),
            "plan: missing 'output LEN'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "output H", "output h")),
            "plan: unknown dimension 'h' in the output (declare it in 'dims' "
            "first)");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "next:h out", "next:h")),
            "plan: no step or scan operation writes the output ('out')");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "weight W1 Wh", "weight W1 Wh Wx")),
            "plan: weight 'W1' stacks params with different COLS: "
            "'Wh' has H, 'Wx' has I");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "weight W1 Wh", "weight W1 Wq")),
            "plan: weight 'W1' stacks unknown param 'Wq'");
}

TEST(PlanErrorTest, References) {
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "step gemm step:q W1",
                                   "step gemm step:q W2")),
            "plan line 14: unknown weight 'W2'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "seq:p step:q", "seq:p seq:q")),
            "plan line 15: 'seq:q' refers to a step buffer");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "state:h next:h out",
                                   "state:c next:h out")),
            "plan line 15: unknown state 'c' in 'state:c'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "pre gemm seq:p W0 input:x",
                                   "pre gemm seq:p W0 state:h")),
            "plan line 13: pre gemm input cannot be 'state:h' (allowed: "
            "input, seq)");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "step gemm step:q W1 state:h",
                                   "step gemm param:Wh W1 state:h")),
            "plan line 14: step gemm output cannot be 'param:Wh' (allowed: "
            "seq, step, next, out)");
}

TEST(PlanTest, ParsesAndPrintsTrainingPlans) {
  for (const char *text : {atrTrainingPlan, linearTrainingPlan}) {
    Expected<Plan> plan = cellc_test::readPlanText(text);
    ASSERT_TRUE(plan.ok()) << plan.error();
    EXPECT_TRUE(plan->hasBackward());
    EXPECT_EQ(printPlan(*plan), text);
    Expected<Plan> again = cellc_test::readPlanText(printPlan(*plan));
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(printPlan(*again), text);
  }
  Expected<Plan> forwardOnly = cellc_test::readPlanText(atrPlan);
  ASSERT_TRUE(forwardOnly.ok());
  EXPECT_FALSE(forwardOnly->hasBackward());

  Expected<Plan> plan = cellc_test::readPlanText(atrTrainingPlan);
  ASSERT_TRUE(plan.ok()) << plan.error();
  ASSERT_EQ(plan->operations.size(), 8u);
  EXPECT_EQ(plan->numKernelsUsed(), 2);
  const Operation &kernel = plan->operations[3];
  EXPECT_EQ(kernel.phase, Phase::BStep);
  EXPECT_EQ(kernel.kernel, 1);
  ASSERT_EQ(kernel.operands.size(), 8u);
  EXPECT_EQ(kernel.operands[3].kind, Ref::Kind::Dnext);
  EXPECT_EQ(kernel.operands[4].kind, Ref::Kind::Dout);
  EXPECT_EQ(kernel.operands[4].str(), "dout");
  EXPECT_EQ(kernel.operands[5].kind, Ref::Kind::Dstate);
  EXPECT_EQ(plan->arrayWidth(kernel.operands[4]).str(), "H");
  const Operation &bpre = plan->operations[5];
  EXPECT_EQ(bpre.phase, Phase::BPre);
  EXPECT_EQ(bpre.kind, Operation::Kind::Gemm);
  EXPECT_EQ(bpre.gemmOutput().kind, Ref::Kind::Dinput);
  EXPECT_EQ(plan->arrayWidth(bpre.gemmOutput()).str(), "I");
  const Operation &wgrad = plan->operations[6];
  EXPECT_EQ(wgrad.phase, Phase::End);
  EXPECT_EQ(wgrad.kind, Operation::Kind::Wgrad);
  EXPECT_EQ(wgrad.weight, "W1");
  EXPECT_EQ(wgrad.wgradDy().str(), "step:dv1");
  EXPECT_EQ(wgrad.wgradX().str(), "state:h");
  EXPECT_EQ(wgrad.line, 21);

  Expected<Plan> linear = cellc_test::readPlanText(linearTrainingPlan);
  ASSERT_TRUE(linear.ok()) << linear.error();
  const Operation &pgrad = linear->operations.back();
  EXPECT_EQ(pgrad.kind, Operation::Kind::Pgrad);
  EXPECT_EQ(pgrad.param, "b");
  EXPECT_EQ(pgrad.operands[0].str(), "seq:dab");
}

// `written` (cell-store-sole-gradients): gradient buffers the kernels
// store, which the runtime does not zero, and inputs whose gradient the
// kernels store (Cell::withInputProducts).
TEST(PlanTest, WrittenBuffersAndInputs) {
  std::string text =
      replaceOnce(replaceOnce(atrTrainingPlan, "buffer seq dv0 H\n",
                              "buffer seq dv0 H written\n"),
                  "input x I\n", "input x I written\n");
  Expected<Plan> plan = cellc_test::readPlanText(text);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_TRUE(plan->findBuffer("dv0")->written);
  EXPECT_FALSE(plan->findBuffer("dv1")->written);
  EXPECT_TRUE(plan->inputs[0].gradientWritten);
  EXPECT_EQ(printPlan(*plan), text);

  expectRefusedWith(replaceOnce(atrTrainingPlan, "buffer seq v0 H\n",
                                "buffer seq v0 H written\n"),
                    "the written buffer 'v0' is used in forward");
  expectRefusedWith(replaceOnce(text, "bstep gemm dstate:h W1 step:dv1",
                                "bstep gemm seq:dv0 W1 step:dv1"),
                    "a gemm adds to 'seq:dv0', but its buffer is written");
  expectRefusedWith(replaceOnce(atrTrainingPlan, "buffer step dv1 H\n",
                                "buffer step dv1 H\nbuffer step dz H "
                                "written\n"),
                    "the written buffer 'dz' is not written by any backward "
                    "kernel");
  expectRefusedWith(replaceOnce(text, "dv0 H written", "dv0 H stored"),
                    "'buffer' takes 3 operands");
  expectRefusedWith(replaceOnce(text, "state h H", "state h H written"),
                    "'state' takes 2 operands");
}

TEST(PlanErrorTest, BackwardDirectives) {
  const std::string plan = atrTrainingPlan;
  EXPECT_EQ(parseError(replaceOnce(plan, "wgrad W1 step:dv1 state:h",
                                   "wgrad W1 step:dv1")),
            "plan line 21: 'wgrad' takes 3 operands (wgrad WEIGHT DY X), got "
            "'wgrad W1 step:dv1'");
  EXPECT_EQ(parseError(replaceOnce(plan, "wgrad W1 step:dv1 state:h",
                                   "wgrad W2 step:dv1 state:h")),
            "plan line 21: unknown weight 'W2'");
  EXPECT_EQ(parseError(replaceOnce(plan, "wgrad W1 step:dv1 state:h",
                                   "wgrad W1 dout state:h")),
            "plan line 21: wgrad DY cannot be 'dout' (allowed: input, state, "
            "seq, step)");
  EXPECT_EQ(parseError(replaceOnce(plan, "wgrad W1 step:dv1 state:h",
                                   "wgrad W1 step:dv1+H state:h")),
            "plan line 21: wgrad DY 'step:dv1+H' needs H columns from column "
            "H but its array has H");
  EXPECT_EQ(parseError(replaceOnce(plan, "wgrad W1 step:dv1 state:h",
                                   "pgrad Wh step:dv1")),
            "plan line 21: pgrad takes a vector param, but 'Wh' is a matrix "
            "(its gradient comes from wgrad)");
  EXPECT_EQ(parseError(replaceOnce(plan, "wgrad W1 step:dv1 state:h",
                                   "pgrad Wq step:dv1")),
            "plan line 21: unknown param 'Wq'");
  EXPECT_EQ(parseError(replaceOnce(plan, "dnext:h dout", "dnext:c dout")),
            "plan line 18: unknown state 'c' in 'dnext:c'");
  EXPECT_EQ(parseError(replaceOnce(plan, "dnext:h dout", "dnext:h out")),
            "plan line 18: bstep kernel argument cannot be 'out' (allowed: "
            "input, state, next, param, seq, step, dnext, dstate, dout, "
            "dinput)");
  EXPECT_EQ(parseError(replaceOnce(plan, "bpre gemm dinput:x W0 seq:dv0",
                                   "bpre gemm dinput:y W0 seq:dv0")),
            "plan line 20: unknown input 'y' in 'dinput:y'");
  EXPECT_EQ(parseError(replaceOnce(plan, "bpre gemm dinput:x W0 seq:dv0",
                                   "bpre gemm dinput:x W0 dstate:h")),
            "plan line 20: bpre gemm input cannot be 'dstate:h' (allowed: "
            "input, state, seq, step)");
  EXPECT_EQ(parseError(replaceOnce(plan, "bstep gemm dstate:h W1 step:dv1",
                                   "bstep gemm dnext:h W1 step:dv1")),
            "plan line 19: bstep gemm output cannot be 'dnext:h' (allowed: "
            "seq, step, dstate, dinput)");
  EXPECT_EQ(parseError(replaceOnce(plan, "bstep gemm dstate:h W1 step:dv1",
                                   "bstep gemm dstate:h W1")),
            "plan line 19: gemm takes OUT WEIGHT IN, got 'bstep gemm "
            "dstate:h W1'");
  EXPECT_EQ(parseError(replaceOnce(plan, "bstep kernel 1", "bstep kernal 1")),
            "plan line 18: expected 'gemm' or 'kernel' after 'bstep', got "
            "'kernal'");
  EXPECT_EQ(parseError(replaceOnce(plan, "next:h out\n", "next:h out dout\n")),
            "plan line 17: step kernel argument cannot be 'dout' (allowed: "
            "input, state, next, param, seq, step, out)");
  EXPECT_EQ(parseError(replaceOnce(plan, "pre gemm seq:v0 W0 input:x",
                                   "pre gemm seq:v0 W0 dinput:x")),
            "plan line 15: pre gemm input cannot be 'dinput:x' (allowed: "
            "input, seq)");
  std::string noOutput = replaceOnce(plan, "output H", "output 0");
  EXPECT_EQ(parseError(noOutput), "plan line 18: 'dout' is used but the cell "
                                  "has no output ('output 0')");
}

//===----------------------------------------------------------------------===//
// Executing
//===----------------------------------------------------------------------===//

namespace {

/// next = a - b + bias + 0.5 * q (q = U h); writes `out` itself.
/// Arguments: seq:ab seq:ab+H param:b step:q+H state:h next:h out.
void linearKernel(int64_t rowBegin, int64_t rowEnd, int64_t step,
                  const int32_t *lengths, const int64_t *dims,
                  float *const *ptrs, const int64_t *strides) {
  int64_t hidden = dims[0];
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    auto row = [&](int i) { return ptrs[i] + r * strides[i]; };
    float *next = row(5), *out = row(6);
    const float *state = row(4);
    bool active = step < lengths[r];
    for (int64_t j = 0; j < hidden; ++j) {
      next[j] = active ? row(0)[j] - row(1)[j] + row(2)[j] + 0.5f * row(3)[j]
                       : state[j];
      out[j] = active ? next[j] : 0.0f;
    }
  }
}

/// The backward of linearKernel: with g = dnext + dout, d(ab) += [g, -g],
/// dq += 0.5 g; an inactive row carried the state, so dstate += dnext.
/// Arguments: dnext:h dout dstate:h seq:dab seq:dab+H step:dq.
void linearBackwardKernel(int64_t rowBegin, int64_t rowEnd, int64_t step,
                          const int32_t *lengths, const int64_t *dims,
                          float *const *ptrs, const int64_t *strides) {
  int64_t hidden = dims[0];
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    auto row = [&](int i) { return ptrs[i] + r * strides[i]; };
    const float *dnext = row(0), *dout = row(1);
    float *dstate = row(2), *da = row(3), *db = row(4), *dq = row(5);
    bool active = step < lengths[r];
    for (int64_t j = 0; j < hidden; ++j) {
      if (!active) {
        dstate[j] += dnext[j];
        continue;
      }
      float g = dnext[j] + dout[j];
      da[j] += g;
      db[j] -= g;
      dq[j] += 0.5f * g;
    }
  }
}

const cellrt_kernel_fn linearKernels[] = {linearKernel, linearBackwardKernel};
const char *const linearKernelNames[] = {"lin_step", "lin_step_backward"};

cellrt_image imageFor(const char *plan, int64_t numKernels = 1) {
  return {cellc_test::planTables(plan), linearKernels, linearKernelNames,
          numKernels};
}

std::vector<float> randomVector(std::mt19937 &rng, size_t count) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &v : values)
    v = dist(rng);
  return values;
}

/// Shapes and data for one run of the `lin` cell.
struct LinearProblem {
  int64_t steps, batch, inputSize, hidden;
  std::vector<int32_t> lengths;
  std::vector<float> x, h0, a, b, u, bias;

  LinearProblem(int64_t steps, int64_t batch, int64_t inputSize, int64_t hidden,
                unsigned seed)
      : steps(steps), batch(batch), inputSize(inputSize), hidden(hidden) {
    std::mt19937 rng(seed);
    for (int64_t i = 0; i < batch; ++i)
      lengths.push_back(i == 0 ? steps : 1 + rng() % steps);
    x = randomVector(rng, steps * batch * inputSize);
    h0 = randomVector(rng, batch * hidden);
    a = randomVector(rng, hidden * inputSize);
    b = randomVector(rng, hidden * inputSize);
    u = randomVector(rng, hidden * hidden);
    bias = randomVector(rng, hidden);
  }

  ForwardArgs args(float *out, float *finalState, bool reverse) const {
    ForwardArgs args;
    args.inputs = {{x.data(), {steps, batch, inputSize}}};
    args.lengths = lengths.data();
    args.initialStates = {{h0.data(), {batch, hidden}}};
    args.params = {{"A", {a.data(), {hidden, inputSize}}},
                   {"B", {b.data(), {hidden, inputSize}}},
                   {"U", {u.data(), {hidden, hidden}}},
                   {"b", {bias.data(), {hidden}}}};
    args.reverse = reverse;
    args.output = {out, {steps, batch, hidden}};
    args.finalStates = {{finalState, {batch, hidden}}};
    return args;
  }

  /// Straightforward per-sequence evaluation in double precision.
  void reference(bool reverse, std::vector<float> &out,
                 std::vector<float> &finalState) const {
    std::vector<double> out64, final64;
    reference(reverse, out64, final64);
    out.assign(out64.begin(), out64.end());
    finalState.assign(final64.begin(), final64.end());
  }

  /// L = sum(out * dout) + sum(finalState * dfinal), in double precision.
  double loss(bool reverse, const std::vector<float> &dout,
              const std::vector<float> &dfinal) const {
    std::vector<double> out, finalState;
    reference(reverse, out, finalState);
    double sum = 0;
    for (size_t i = 0; i < out.size(); ++i)
      sum += out[i] * dout[i];
    for (size_t i = 0; i < finalState.size(); ++i)
      sum += finalState[i] * dfinal[i];
    return sum;
  }

  void reference(bool reverse, std::vector<double> &out,
                 std::vector<double> &finalState) const {
    out.assign(steps * batch * hidden, 0.0);
    finalState.assign(batch * hidden, 0.0);
    for (int64_t s = 0; s < batch; ++s) {
      std::vector<double> h(h0.begin() + s * hidden,
                            h0.begin() + (s + 1) * hidden);
      for (int64_t i = 0; i < lengths[s]; ++i) {
        int64_t t = reverse ? lengths[s] - 1 - i : i;
        const float *xt = &x[(t * batch + s) * inputSize];
        std::vector<double> next(hidden);
        for (int64_t j = 0; j < hidden; ++j) {
          double value = bias[j];
          for (int64_t k = 0; k < inputSize; ++k)
            value += (a[j * inputSize + k] - b[j * inputSize + k]) * xt[k];
          for (int64_t k = 0; k < hidden; ++k)
            value += 0.5 * u[j * hidden + k] * h[k];
          next[j] = value;
        }
        h = next;
        for (int64_t j = 0; j < hidden; ++j)
          out[(t * batch + s) * hidden + j] = h[j];
      }
      for (int64_t j = 0; j < hidden; ++j)
        finalState[s * hidden + j] = h[j];
    }
  }
};

void expectClose(const std::vector<float> &actual,
                 const std::vector<float> &expected, const char *what) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], 1e-4 * (1 + std::fabs(expected[i])))
        << what << " element " << i;
}

} // namespace

TEST(ExecutorTest, LoadChecksKernelCount) {
  Expected<Cell> cell = Cell::load(imageFor(atrPlan, 0));
  ASSERT_FALSE(cell.ok());
  EXPECT_EQ(
      cell.error(),
      "plan of cell 'atr' uses kernel 0 but the image has only 0 kernels");
  // An object from before the tables carried the plan as text.
  Expected<Cell> old =
      Cell::load({atrPlan, linearKernels, linearKernelNames, 1});
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.error(), "the object carries its plan as text, from a cellc "
                         "older than this runtime: recompile the cell with "
                         "this cellc");
  Expected<Cell> loaded = Cell::load(imageFor(linearPlan));
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ(loaded->getKernelName(0), "lin_step");
}

TEST(ExecutorTest, StackedWeightsOffsetsAndBothDirections) {
  Expected<Cell> cell = Cell::load(imageFor(linearPlan));
  ASSERT_TRUE(cell.ok()) << cell.error();
  for (auto [steps, batch, inputSize, hidden] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1},
        {4, 3, 5, 2},
        {9, 6, 7, 11}}) {
    LinearProblem problem(steps, batch, inputSize, hidden, 7 + steps);
    for (bool reverse : {false, true}) {
      SCOPED_TRACE("T=" + std::to_string(steps) +
                   " reverse=" + std::to_string(reverse));
      std::vector<float> out(steps * batch * hidden, -7.0f),
          finalState(batch * hidden, -7.0f), expectedOut, expectedFinal;
      Status status =
          cell->forward(problem.args(out.data(), finalState.data(), reverse));
      ASSERT_TRUE(status.ok()) << status.message();
      problem.reference(reverse, expectedOut, expectedFinal);
      expectClose(out, expectedOut, "out");
      expectClose(finalState, expectedFinal, "final state");
    }
  }
}

TEST(ExecutorTest, NullInitialStateAndOutput) {
  Expected<Cell> cell = Cell::load(imageFor(linearPlan));
  ASSERT_TRUE(cell.ok()) << cell.error();
  LinearProblem problem(5, 3, 4, 6, 3);
  std::vector<float> finalState(3 * 6), expectedOut, expectedFinal;
  std::fill(problem.h0.begin(), problem.h0.end(), 0.0f);
  problem.reference(false, expectedOut, expectedFinal);
  ForwardArgs args = problem.args(nullptr, finalState.data(), false);
  args.initialStates.clear();
  Status status = cell->forward(args);
  ASSERT_TRUE(status.ok()) << status.message();
  expectClose(finalState, expectedFinal, "final state");
}

TEST(ExecutorTest, BindsDimsFromShapes) {
  Expected<Cell> cell = Cell::load(imageFor(linearPlan));
  ASSERT_TRUE(cell.ok()) << cell.error();
  LinearProblem problem(2, 3, 4, 5, 1);
  Expected<std::vector<int64_t>> dims =
      cell->bindDims(problem.args(nullptr, nullptr, false));
  ASSERT_TRUE(dims.ok()) << dims.error();
  EXPECT_EQ(*dims, (std::vector<int64_t>{5, 4}));
}

/// forward()'s error on linearPlan's problem (T=2, B=3, H=5) after
/// `change`; `primed`: right after a successful call on the unchanged
/// arrays, whose sizes the Cell keeps.
std::string forwardError(const Cell &cell, const LinearProblem &problem,
                         const std::function<void(ForwardArgs &)> &change,
                         bool primed) {
  std::vector<float> out(2 * 3 * 5), finalState(3 * 5);
  if (primed) {
    Status status =
        cell.forward(problem.args(out.data(), finalState.data(), false));
    EXPECT_TRUE(status.ok()) << status.message();
  }
  ForwardArgs args = problem.args(out.data(), finalState.data(), false);
  change(args);
  Status status = cell.forward(args);
  EXPECT_FALSE(status.ok());
  return status.message();
}

TEST(ExecutorErrorTest, MisShapedArrays) {
  Expected<Cell> cell = Cell::load(imageFor(linearPlan));
  ASSERT_TRUE(cell.ok()) << cell.error();
  LinearProblem problem(2, 3, 4, 5, 1);
  auto errorFor = [&](const std::function<void(ForwardArgs &)> &change) {
    return forwardError(*cell, problem, change, /*primed=*/false);
  };
  EXPECT_EQ(errorFor([](ForwardArgs &a) {
              a.params["U"].shape = {5, 4};
            }),
            "param 'U' has shape [5, 4] but the plan expects [H, H] = [5, 5]; "
            "dimension H = 5 comes from param 'A' [5, 4]");
  EXPECT_EQ(errorFor([](ForwardArgs &a) {
              a.params["b"].shape = {5, 1};
            }),
            "param 'b' has shape [5, 1] but the plan expects [H] = [5]");
  EXPECT_EQ(errorFor([](ForwardArgs &a) {
              a.initialStates[0].shape = {3, 6};
            }),
            "initial state 'h' has shape [3, 6] but the plan expects [B, H] = "
            "[3, 5]; dimension H = 5 comes from param 'A' [5, 4]");
  EXPECT_EQ(errorFor([](ForwardArgs &a) {
              a.output.shape = {2, 4, 5};
            }),
            "the output has shape [2, 4, 5] but the plan expects [T, B, H] = "
            "[2, 3, 5]");
  EXPECT_EQ(errorFor([](ForwardArgs &a) {
              a.inputs[0].shape = {2, 3};
            }),
            "input 'x' has shape [2, 3] but must be [T, B, LEN]");
  EXPECT_EQ(errorFor([](ForwardArgs &a) { a.params.erase("B"); }),
            "missing param 'B'");
  EXPECT_EQ(errorFor([&](ForwardArgs &a) {
              a.params["C"] = {problem.a.data(), {5, 4}};
            }),
            "unknown param 'C' (cell 'lin' has params: A B U b)");
  EXPECT_EQ(errorFor([](ForwardArgs &a) { a.inputs.clear(); }),
            "cell 'lin' takes 1 inputs, got 0");
  std::vector<int32_t> badLengths = {2, 0, 1};
  EXPECT_EQ(errorFor([&](ForwardArgs &a) { a.lengths = badLengths.data(); }),
            "lengths[1] = 0 is outside [1, T] = [1, 2]");
}

// A Cell keeps the sizes of its last call's shapes (detail::SizesCache):
// a call right after a successful one, with one thing changed, must get the
// same error as a first call.
TEST(ExecutorErrorTest, ErrorsRightAfterASuccessfulCall) {
  Expected<Cell> cell = Cell::load(imageFor(linearPlan));
  ASSERT_TRUE(cell.ok()) << cell.error();
  LinearProblem problem(2, 3, 4, 5, 1);
  auto errorFor = [&](const std::function<void(ForwardArgs &)> &change) {
    return forwardError(*cell, problem, change, /*primed=*/true);
  };
  EXPECT_EQ(errorFor([](ForwardArgs &a) {
              a.params["U"].shape = {5, 4};
            }),
            "param 'U' has shape [5, 4] but the plan expects [H, H] = [5, 5]; "
            "dimension H = 5 comes from param 'A' [5, 4]");
  // The same shapes under another name.
  EXPECT_EQ(errorFor([&](ForwardArgs &a) {
              a.params["C"] = a.params["B"];
              a.params.erase("B");
            }),
            "unknown param 'C' (cell 'lin' has params: A B U b)");
  EXPECT_EQ(errorFor([](ForwardArgs &a) { a.params["A"].data = nullptr; }),
            "param 'A' is null");
  EXPECT_EQ(errorFor([](ForwardArgs &a) { a.inputs[0].data = nullptr; }),
            "input 'x' is null");
  std::vector<int32_t> badLengths = {2, 3, 1};
  EXPECT_EQ(errorFor([&](ForwardArgs &a) { a.lengths = badLengths.data(); }),
            "lengths[1] = 3 is outside [1, T] = [1, 2]");
  EXPECT_EQ(errorFor([](ForwardArgs &a) { a.lengths = nullptr; }),
            "lengths is null");
  // A shape that binds other sizes is solved again, not refused.
  LinearProblem wider(2, 3, 4, 6, 1);
  std::vector<float> widerOut(2 * 3 * 6), widerFinal(3 * 6);
  Status status =
      cell->forward(wider.args(widerOut.data(), widerFinal.data(), false));
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(ExecutorErrorTest, ColumnsOutsideTheirArray) {
  LinearProblem problem(2, 3, 4, 5, 1);
  std::string narrow =
      replaceOnce(linearPlan, "buffer step q 2*H+1", "buffer step q H+1");
  Expected<Cell> narrowCell = Cell::load(imageFor(narrow.c_str()));
  ASSERT_TRUE(narrowCell.ok()) << narrowCell.error();
  Status status = narrowCell->forward(problem.args(nullptr, nullptr, false));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "plan operation 'step gemm step:q+H W1 state:h': gemm output "
            "'step:q+H' needs columns [5, 10) but its array has 6");
}

TEST(ExecutorErrorTest, NoValueOfADimensionMatches) {
  std::string plan = "cellc-plan 1\n"
                     "cell v\n"
                     "dims H\n"
                     "input x 2*H\n"
                     "state h H\n"
                     "output H\n"
                     "step kernel 0 input:x state:h next:h out\n";
  Expected<Cell> cell = Cell::load(imageFor(plan.c_str()));
  ASSERT_TRUE(cell.ok()) << cell.error();
  std::vector<float> x(2 * 3 * 7);
  std::vector<int32_t> lengths = {1, 2, 2};
  ForwardArgs args;
  args.inputs = {{x.data(), {2, 3, 7}}};
  args.lengths = lengths.data();
  Status status = cell->forward(args);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), "input 'x' has shape [2, 3, 7] but the plan "
                              "expects [T, B, 2*H], which no positive value "
                              "of H matches");
}

//===----------------------------------------------------------------------===//
// Training mode and backward
//===----------------------------------------------------------------------===//

namespace {

/// Gradients of LinearProblem::loss, accumulated by cellrt.
struct LinearGradients {
  std::vector<float> dx, dh0, da, db, du, dbias;

  explicit LinearGradients(const LinearProblem &p)
      : dx(p.steps * p.batch * p.inputSize), dh0(p.batch * p.hidden),
        da(p.hidden * p.inputSize), db(p.hidden * p.inputSize),
        du(p.hidden * p.hidden), dbias(p.hidden) {}

  BackwardArgs args(const LinearProblem &p, const std::vector<float> &dout,
                    const std::vector<float> &dfinal) {
    BackwardArgs args;
    args.outputGradient = {dout.data(), {p.steps, p.batch, p.hidden}};
    args.finalStateGradients = {{dfinal.data(), {p.batch, p.hidden}}};
    args.inputGradients = {{dx.data(), {p.steps, p.batch, p.inputSize}}};
    args.initialStateGradients = {{dh0.data(), {p.batch, p.hidden}}};
    args.paramGradients = {{"A", {da.data(), {p.hidden, p.inputSize}}},
                           {"B", {db.data(), {p.hidden, p.inputSize}}},
                           {"U", {du.data(), {p.hidden, p.hidden}}},
                           {"b", {dbias.data(), {p.hidden}}}};
    return args;
  }
};

/// Checks <gradient, v> against a central difference of the loss along a
/// random direction v of `values`.
void expectDirectionalDerivative(LinearProblem &problem,
                                 std::vector<float> &values,
                                 const std::vector<float> &gradient,
                                 bool reverse, const std::vector<float> &dout,
                                 const std::vector<float> &dfinal,
                                 const char *what) {
  std::mt19937 rng(values.size());
  std::vector<float> direction = randomVector(rng, values.size());
  std::vector<float> saved = values;
  const double epsilon = 1e-2;
  auto lossAt = [&](double scale) {
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = saved[i] + static_cast<float>(scale * direction[i]);
    return problem.loss(reverse, dout, dfinal);
  };
  double numeric = (lossAt(epsilon) - lossAt(-epsilon)) / (2 * epsilon);
  values = saved;
  double analytic = 0, magnitude = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    analytic += static_cast<double>(gradient[i]) * direction[i];
    magnitude += std::fabs(static_cast<double>(gradient[i]) * direction[i]);
  }
  EXPECT_NEAR(analytic, numeric, 1e-3 * (magnitude + 1e-6)) << what;
}

} // namespace

TEST(BackwardTest, StackedWeightsOffsetsVectorParamsBothDirections) {
  Expected<Cell> cell = Cell::load(imageFor(linearTrainingPlan, 2));
  ASSERT_TRUE(cell.ok()) << cell.error();
  EXPECT_TRUE(cell->hasBackward());
  for (auto [steps, batch, inputSize, hidden] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 1, 1, 1},
        {4, 3, 5, 2},
        {9, 6, 7, 11}}) {
    LinearProblem problem(steps, batch, inputSize, hidden, 11 + steps);
    for (bool reverse : {false, true}) {
      SCOPED_TRACE("T=" + std::to_string(steps) +
                   " reverse=" + std::to_string(reverse));
      std::mt19937 rng(5 + steps);
      std::vector<float> dout = randomVector(rng, steps * batch * hidden),
                         dfinal = randomVector(rng, batch * hidden);
      std::vector<float> out(steps * batch * hidden, -7.0f),
          finalState(batch * hidden, -7.0f), expectedOut, expectedFinal;
      ForwardArgs args = problem.args(out.data(), finalState.data(), reverse);
      Tape tape;
      EXPECT_FALSE(tape.isRecorded());
      Status status = cell->forward(args, tape);
      ASSERT_TRUE(status.ok()) << status.message();
      EXPECT_TRUE(tape.isRecorded());
      problem.reference(reverse, expectedOut, expectedFinal);
      expectClose(out, expectedOut, "out");
      expectClose(finalState, expectedFinal, "final state");

      LinearGradients grads(problem);
      status = cell->backward(args, grads.args(problem, dout, dfinal), tape);
      ASSERT_TRUE(status.ok()) << status.message();
      expectDirectionalDerivative(problem, problem.x, grads.dx, reverse, dout,
                                  dfinal, "dx");
      expectDirectionalDerivative(problem, problem.h0, grads.dh0, reverse, dout,
                                  dfinal, "dh0");
      expectDirectionalDerivative(problem, problem.a, grads.da, reverse, dout,
                                  dfinal, "dA");
      expectDirectionalDerivative(problem, problem.b, grads.db, reverse, dout,
                                  dfinal, "dB");
      expectDirectionalDerivative(problem, problem.u, grads.du, reverse, dout,
                                  dfinal, "dU");
      expectDirectionalDerivative(problem, problem.bias, grads.dbias, reverse,
                                  dout, dfinal, "db");
      for (int64_t t = 0; t < steps; ++t)
        for (int64_t s = 0; s < batch; ++s)
          for (int64_t k = 0; k < inputSize; ++k)
            if (t >= problem.lengths[s])
              ASSERT_EQ(grads.dx[(t * batch + s) * inputSize + k], 0.0f)
                  << "padded step " << t << " of sequence " << s;
    }
  }
}

TEST(BackwardTest, UnwantedGradientsAndNoOutputGradient) {
  Expected<Cell> cell = Cell::load(imageFor(linearTrainingPlan, 2));
  ASSERT_TRUE(cell.ok()) << cell.error();
  LinearProblem problem(5, 3, 4, 6, 3);
  std::vector<float> dout(5 * 3 * 6, 0.0f), dfinal(3 * 6, 1.0f);
  for (bool reverse : {false, true}) {
    ForwardArgs args = problem.args(nullptr, nullptr, reverse);
    Tape tape;
    ASSERT_TRUE(cell->forward(args, tape).ok());
    // Everything wanted, with an explicit zero output gradient...
    LinearGradients all(problem);
    Status status = cell->backward(args, all.args(problem, dout, dfinal), tape);
    ASSERT_TRUE(status.ok()) << status.message();
    // ... equals only some wanted, with a null output gradient.
    LinearGradients some(problem);
    BackwardArgs gradients = some.args(problem, dout, dfinal);
    gradients.outputGradient = {};
    gradients.inputGradients.clear();
    gradients.paramGradients.erase("A");
    gradients.paramGradients["U"].data = nullptr;
    status = cell->backward(args, gradients, tape);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(some.dh0, all.dh0);
    EXPECT_EQ(some.db, all.db);
    EXPECT_EQ(some.dbias, all.dbias);
    EXPECT_EQ(some.da, std::vector<float>(some.da.size(), 0.0f));
    EXPECT_EQ(some.du, std::vector<float>(some.du.size(), 0.0f));
    EXPECT_EQ(some.dx, std::vector<float>(some.dx.size(), 0.0f));
  }
}

// A decoder trained step by step calls forward once per step: with the
// caller's PackedWeights a training call stacks no weight of its own, and
// its backward multiplies by the same packed copy. Seen here by changing a
// stacked param after packing: both passes still read the packed values.
TEST(BackwardTest, TrainingReadsPackedWeightsInBothPasses) {
  Expected<Cell> cell = Cell::load(imageFor(linearTrainingPlan, 2));
  ASSERT_TRUE(cell.ok()) << cell.error();
  // 6 rows: the forward's products read the oneDNN-packed copy too.
  LinearProblem problem(4, 6, 4, 5, 9);
  const int64_t outCount = problem.steps * problem.batch * problem.hidden;
  std::mt19937 rng(4);
  std::vector<float> dout = randomVector(rng, outCount),
                     dfinal = randomVector(rng, problem.batch * problem.hidden);
  auto train = [&](const PackedWeights *packed, std::vector<float> &out,
                   LinearGradients &grads) {
    out.assign(outCount, 0.f);
    std::vector<float> finalState(problem.batch * problem.hidden);
    ForwardArgs args = problem.args(out.data(), finalState.data(), false);
    args.packedWeights = packed;
    Tape tape;
    Status status = cell->forward(args, tape);
    ASSERT_TRUE(status.ok()) << status.message();
    status = cell->backward(args, grads.args(problem, dout, dfinal), tape);
    ASSERT_TRUE(status.ok()) << status.message();
  };
  std::vector<float> plainOut, packedOut, staleOut;
  LinearGradients plain(problem), withPacked(problem), stale(problem);
  train(nullptr, plainOut, plain);
  Expected<PackedWeights> packed =
      cell->packWeights(problem.args(nullptr, nullptr, false).params);
  ASSERT_TRUE(packed.ok()) << packed.error();
  train(&*packed, packedOut, withPacked);
  expectClose(packedOut, plainOut, "out with packed weights");
  expectClose(withPacked.dx, plain.dx, "dx with packed weights");
  expectClose(withPacked.da, plain.da, "dA with packed weights");
  expectClose(withPacked.du, plain.du, "dU with packed weights");

  // A is half of the stacked W0: the packed copy keeps the old values.
  std::fill(problem.a.begin(), problem.a.end(), 0.f);
  train(&*packed, staleOut, stale);
  EXPECT_EQ(staleOut, packedOut) << "the forward stacked A again";
  EXPECT_EQ(stale.dx, withPacked.dx) << "the backward stacked A again";
}

TEST(BackwardErrorTest, TapeAndPlan) {
  LinearProblem problem(2, 3, 4, 5, 1);
  ForwardArgs args = problem.args(nullptr, nullptr, false);
  LinearGradients grads(problem);
  std::vector<float> dout(2 * 3 * 5), dfinal(3 * 5);
  BackwardArgs gradients = grads.args(problem, dout, dfinal);

  Expected<Cell> inference = Cell::load(imageFor(linearPlan));
  ASSERT_TRUE(inference.ok()) << inference.error();
  EXPECT_FALSE(inference->hasBackward());
  Tape tape;
  const char *noBackward = "cell 'lin' has no backward pass: its plan lists "
                           "no bstep, bpre, wgrad or pgrad directives";
  EXPECT_EQ(inference->forward(args, tape).message(), noBackward);
  EXPECT_EQ(inference->backward(args, gradients, tape).message(), noBackward);

  Expected<Cell> cell = Cell::load(imageFor(linearTrainingPlan, 2));
  ASSERT_TRUE(cell.ok()) << cell.error();
  EXPECT_EQ(cell->backward(args, gradients, tape).message(),
            "backward: the tape holds no recorded forward pass (call "
            "forward(args, tape) first)");
  // A training plan still runs inference, which records nothing.
  EXPECT_TRUE(cell->forward(args).ok());
  EXPECT_FALSE(tape.isRecorded());

  ASSERT_TRUE(cell->forward(args, tape).ok());
  ForwardArgs reversed = args;
  reversed.reverse = true;
  EXPECT_EQ(cell->backward(reversed, gradients, tape).message(),
            "backward: args.reverse is true but the tape was recorded with "
            "false");
  std::vector<int32_t> otherLengths = problem.lengths;
  otherLengths[1] = otherLengths[1] == 1 ? 2 : 1;
  ForwardArgs shorter = args;
  shorter.lengths = otherLengths.data();
  EXPECT_EQ(cell->backward(shorter, gradients, tape).message(),
            "backward: lengths[1] = " + std::to_string(otherLengths[1]) +
                " but the tape was recorded with " +
                std::to_string(problem.lengths[1]));
  LinearProblem bigger(2, 3, 4, 6, 1);
  EXPECT_EQ(
      cell->backward(bigger.args(nullptr, nullptr, false), gradients, tape)
          .message(),
      "backward: the arguments bind T=2 B=3 H=6 I=4 but the tape was "
      "recorded with T=2 B=3 H=5 I=4");
  Expected<Cell> atr = Cell::load({cellc_test::planTables(atrTrainingPlan),
                                   linearKernels, linearKernelNames, 2});
  ASSERT_TRUE(atr.ok()) << atr.error();
  ForwardArgs atrArgs;
  atrArgs.inputs = args.inputs;
  atrArgs.lengths = args.lengths;
  atrArgs.params = {{"Wx", args.params["A"]}, {"Wh", args.params["U"]}};
  EXPECT_EQ(atr->backward(atrArgs, {}, tape).message(),
            "backward: the tape was recorded by another cell");
}

TEST(BackwardErrorTest, MisShapedGradients) {
  Expected<Cell> cell = Cell::load(imageFor(linearTrainingPlan, 2));
  ASSERT_TRUE(cell.ok()) << cell.error();
  LinearProblem problem(2, 3, 4, 5, 1);
  ForwardArgs args = problem.args(nullptr, nullptr, false);
  Tape tape;
  ASSERT_TRUE(cell->forward(args, tape).ok());
  std::vector<float> dout(2 * 3 * 5), dfinal(3 * 5);
  auto errorFor = [&](const std::function<void(BackwardArgs &)> &change) {
    LinearGradients grads(problem);
    BackwardArgs gradients = grads.args(problem, dout, dfinal);
    change(gradients);
    Status status = cell->backward(args, gradients, tape);
    EXPECT_FALSE(status.ok());
    // Nothing was accumulated.
    EXPECT_EQ(grads.dbias, std::vector<float>(grads.dbias.size(), 0.0f));
    return status.message();
  };
  EXPECT_EQ(errorFor([](BackwardArgs &g) {
              g.paramGradients["U"].shape = {5, 4};
            }),
            "gradient of param 'U' has shape [5, 4] but the plan expects "
            "[H, H] = [5, 5]; dimension H = 5 comes from param 'A' [5, 4]");
  EXPECT_EQ(errorFor([](BackwardArgs &g) {
              g.inputGradients[0].shape = {2, 3, 5};
            }),
            "input gradient 'x' has shape [2, 3, 5] but the plan expects "
            "[T, B, I] = [2, 3, 4]; dimension I = 4 comes from param 'A' "
            "[5, 4]");
  EXPECT_EQ(errorFor([](BackwardArgs &g) {
              g.outputGradient.shape = {3, 3, 5};
            }),
            "the output gradient has shape [3, 3, 5] but the plan expects "
            "[T, B, H] = [2, 3, 5]");
  EXPECT_EQ(errorFor([](BackwardArgs &g) {
              g.finalStateGradients[0].shape = {3, 4};
            }),
            "final state gradient 'h' has shape [3, 4] but the plan expects "
            "[B, H] = [3, 5]; dimension H = 5 comes from param 'A' [5, 4]");
  EXPECT_EQ(
      errorFor([](BackwardArgs &g) { g.initialStateGradients[0].shape = {5}; }),
      "initial state gradient 'h' has shape [5] but the plan expects "
      "[B, H] = [3, 5]");
  EXPECT_EQ(errorFor([](BackwardArgs &g) {
              g.paramGradients["Q"] = g.paramGradients["U"];
            }),
            "gradient for unknown param 'Q' (cell 'lin' has params: A B U b)");
  EXPECT_EQ(errorFor([](BackwardArgs &g) {
              g.inputGradients.push_back(g.inputGradients[0]);
            }),
            "cell 'lin' has 1 inputs, got 2 input gradients");
}

//===----------------------------------------------------------------------===//
// Scan kernels in training
//===----------------------------------------------------------------------===//

namespace {

/// h' = h + x, out = h'. Arguments: input:x state:h next:h out.
void accumulateStep(int64_t rowBegin, int64_t rowEnd, int64_t step,
                    const int32_t *lengths, const int64_t *dims,
                    float *const *ptrs, const int64_t *strides) {
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    auto row = [&](int i) { return ptrs[i] + r * strides[i]; };
    bool active = step < lengths[r];
    for (int64_t j = 0; j < dims[0]; ++j) {
      row(2)[j] = active ? row(1)[j] + row(0)[j] : row(1)[j];
      row(3)[j] = active ? row(2)[j] : 0.0f;
    }
  }
}

/// A scan kernel that marks every output and next-state element it can
/// reach with 7, to show which kernel a call ran.
void markingScan(int64_t rowBegin, int64_t rowEnd, int64_t steps,
                 const int32_t *, const int64_t *dims, float *const *ptrs,
                 const int64_t *strides) {
  for (int64_t r = rowBegin; r < rowEnd; ++r)
    for (int64_t t = 0; t < steps; ++t)
      for (int arg : {2, 3})
        std::fill_n(ptrs[arg] + r * strides[arg] + t * strides[4 + arg],
                    dims[0], 7.0f);
}

/// dstate += dnext + dout (active), dnext (inactive); dinput += dnext + dout.
/// Arguments: dnext:h dout dstate:h dinput:x.
void accumulateBackward(int64_t rowBegin, int64_t rowEnd, int64_t step,
                        const int32_t *lengths, const int64_t *dims,
                        float *const *ptrs, const int64_t *strides) {
  for (int64_t r = rowBegin; r < rowEnd; ++r) {
    auto row = [&](int i) { return ptrs[i] + r * strides[i]; };
    bool active = step < lengths[r];
    for (int64_t j = 0; j < dims[0]; ++j) {
      float g = row(0)[j] + (active ? row(1)[j] : 0.0f);
      row(2)[j] += g;
      if (active)
        row(3)[j] += g;
    }
  }
}

const cellrt_kernel_fn accumulateKernels[] = {accumulateStep, markingScan,
                                              accumulateBackward};
const char *const accumulateKernelNames[] = {"acc_step", "acc_scan",
                                             "acc_step_backward"};

/// The `acc` cell's plan: with `steps` its step kernel and a scan twin (as
/// cellc wrote plans before 2026-11-24), else only the scan.
std::string accumulatePlan(bool steps) {
  return std::string("cellc-plan 1\n"
                     "cell acc\n"
                     "dims H\n"
                     "input x H\n"
                     "state h H\n"
                     "output H\n") +
         (steps ? "step kernel 0 input:x state:h next:h out\n" : "") +
         "scan kernel 1 input:x state:h next:h out\n"
         "bstep kernel 2 dnext:h dout dstate:h dinput:x\n";
}

} // namespace

// A plan with a step kernel and its scan twin trains by its steps (the old
// scans keep no state history); inference, and a plan with only the scan,
// run the scan.
TEST(ScanTest, TrainingRunsTheScanUnlessThePlanHasSteps) {
  const int64_t T = 3, B = 2, H = 4;
  std::vector<float> x(T * B * H, 1.0f);
  std::vector<int32_t> lengths = {3, 2};
  for (bool steps : {true, false}) {
    std::string plan = accumulatePlan(steps);
    Expected<Cell> cell =
        Cell::load({cellc_test::planTables(plan.c_str()), accumulateKernels,
                    accumulateKernelNames, 3});
    ASSERT_TRUE(cell.ok()) << cell.error();
    for (bool training : {false, true}) {
      SCOPED_TRACE(std::string(steps ? "step and scan" : "scan only") +
                   (training ? ", training" : ", inference"));
      std::vector<float> out(T * B * H, -1.0f);
      ForwardArgs args;
      args.inputs = {{x.data(), {T, B, H}}};
      args.lengths = lengths.data();
      args.output = {out.data(), {T, B, H}};
      Tape tape;
      Status status =
          training ? cell->forward(args, tape) : cell->forward(args);
      ASSERT_TRUE(status.ok()) << status.message();
      bool ranSteps = steps && training;
      // Row 0 at step 2 (active): the sum of three ones, or the scan's mark.
      EXPECT_EQ(out[(2 * B + 0) * H], ranSteps ? 3.0f : 7.0f);
      // Row 1 at step 2 (past its length): zero from the step kernel.
      EXPECT_EQ(out[(2 * B + 1) * H], ranSteps ? 0.0f : 7.0f);
    }
  }
}

// The params stacked into one weight are rows of one matrix: packWeights
// refuses them with different column counts rather than read past one.
TEST(ExecutorErrorTest, PackWeightsNeedsStackedParamsOfOneWidth) {
  Expected<Cell> cell = Cell::load(imageFor(linearPlan));
  ASSERT_TRUE(cell.ok()) << cell.error();
  LinearProblem problem(2, 3, 4, 5, 1);
  ForwardArgs args = problem.args(nullptr, nullptr, false);
  std::vector<float> wide(5 * 6);
  args.params["B"] = {wide.data(), {5, 6}};
  Expected<PackedWeights> packed = cell->packWeights(args.params);
  ASSERT_FALSE(packed.ok());
  EXPECT_EQ(packed.error(), "packWeights: params stacked into one weight "
                            "need as many columns: 'A' has 4, 'B' has 6");
}

// The drivers run cellrt's parallel calls on libgomp's OpenMP team
// (CELLRT_POOL=openmp: runtime/OpenMpTeam.h), elsewhere on cellrt's own
// pool; inside a chunk, OpenMP's team size says which ran it. ctest runs
// this binary both ways (OpenMpTeam.RuntimeUnitTests runs it on OpenMP).
TEST(ParallelTest, ChunksRunOnThePoolThatCellrtPoolNames) {
  using CountFn = int (*)();
  auto teamSize =
      reinterpret_cast<CountFn>(dlsym(RTLD_DEFAULT, "omp_get_num_threads"));
  ASSERT_NE(teamSize, nullptr) << "libgomp is not loaded (oneDNN brings it)";
  const char *pool = std::getenv("CELLRT_POOL");
  const bool openMp = pool && std::string(pool) == "openmp";
  int threadsBefore = getNumThreads();
  setNumThreads(2);
  std::vector<int> sizes(4, 0);
  parallelFor(4, 1 << 20, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row)
      sizes[row] = teamSize();
  });
  setNumThreads(threadsBefore);
  EXPECT_EQ(sizes, std::vector<int>(4, openMp ? 2 : 1))
      << "CELLRT_POOL=" << (pool ? pool : "(unset)");
}

// Calls that come back to back (decoding steps) keep the pool's workers
// spinning between them, however slowly a sleeping worker wakes: after a
// pause the workers sleep, and the next back-to-back calls bring them back
// to spinning. When the workers judged by their own time from one chunk
// to the next, a slow wake-up (injected here, 200 µs; ~100 µs on some VMs)
// counted as a gap and kept them asleep for good: decoding steps at 2
// threads ran 10x slower in half of the processes.
TEST(ParallelTest, WorkersSpinAgainWhenCallsComeBackToBack) {
  const char *pool = std::getenv("CELLRT_POOL");
  if (pool && std::string(pool) == "openmp")
    GTEST_SKIP() << "cellrt's own pool only";
  int threadsBefore = getNumThreads();
  setNumThreads(2);
  auto call = [] { parallelFor(2, 1 << 20, [](int64_t, int64_t) {}); };
  cellrt::detail::setPoolWakeDelayForTesting(200);
  call();
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  call();
  int64_t before = cellrt::detail::poolChunksAfterQuickJobs();
  constexpr int kCalls = 50;
  for (int i = 0; i < kCalls; ++i)
    call();
  int64_t quick = cellrt::detail::poolChunksAfterQuickJobs() - before;
  cellrt::detail::setPoolWakeDelayForTesting(0);
  setNumThreads(threadsBefore);
  EXPECT_GE(quick, kCalls - 2);
  // After a pause the calls are not back to back.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  before = cellrt::detail::poolChunksAfterQuickJobs();
  setNumThreads(2);
  call();
  setNumThreads(threadsBefore);
  EXPECT_EQ(cellrt::detail::poolChunksAfterQuickJobs(), before);
}

// A pool worker woken on its caller's core (where the scheduler tends to
// put a woken thread; forced here) moves to another core before it runs
// its chunk: on one core the two took turns for good while the other
// idled, and 2-thread decoding steps ran 10x slower in half of the
// processes.
TEST(ParallelTest, AWorkerWokenOnItsCallersCoreMovesOff) {
  const char *pool = std::getenv("CELLRT_POOL");
  if (pool && std::string(pool) == "openmp")
    GTEST_SKIP() << "cellrt's own pool only";
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  if (CPU_COUNT(&allowed) < 2)
    GTEST_SKIP() << "one core: nowhere to move";
  int threadsBefore = getNumThreads();
  setNumThreads(2);
  cellrt::detail::setPoolPileUpForTesting(true);
  std::vector<int> callerCpu, workerCpu;
  for (int i = 0; i < 20; ++i) {
    int cpus[2] = {-1, -1};
    parallelFor(2, 1 << 20, [&](int64_t begin, int64_t) {
      cpus[begin] = sched_getcpu();
    });
    callerCpu.push_back(cpus[0]);
    workerCpu.push_back(cpus[1]);
  }
  cellrt::detail::setPoolPileUpForTesting(false);
  setNumThreads(threadsBefore);
  int apart = 0;
  for (size_t i = 0; i < callerCpu.size(); ++i)
    apart += callerCpu[i] != workerCpu[i];
  // The caller itself may be moved between its post and its chunk.
  EXPECT_GE(apart, 18);
}

// A parallelFor body that itself calls parallelFor (as a driver's layer
// whose body multiplies in bf16 does: the rounding is split across the
// kernels' threads) runs the inner call inline instead of waiting for the
// pool it is part of: every inner row runs exactly once, and nothing hangs.
TEST(ParallelTest, CallsFromInsideABodyRunInline) {
  int threadsBefore = getNumThreads();
  setNumThreads(2);
  constexpr int64_t kOuter = 4, kInner = 1 << 16;
  std::vector<std::atomic<int>> visits(kOuter * kInner);
  parallelFor(kOuter, kOuter * kInner, [&](int64_t begin, int64_t end) {
    for (int64_t outer = begin; outer < end; ++outer)
      parallelFor(kInner, kInner, [&](int64_t first, int64_t last) {
        for (int64_t inner = first; inner < last; ++inner)
          visits[outer * kInner + inner].fetch_add(1);
      });
  });
  setNumThreads(threadsBefore);
  for (const std::atomic<int> &count : visits)
    ASSERT_EQ(count.load(), 1);
}
