//===- RuntimeTest.cpp - Unit tests of cellrt's plan and executor ---------===//

#include "cellrt/Runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

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

std::string replaceOnce(std::string text, const std::string &from,
                        const std::string &to) {
  size_t pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos)
    text.replace(pos, from.size(), to);
  return text;
}

std::string parseError(const std::string &text) {
  Expected<Plan> plan = parsePlan(text);
  EXPECT_FALSE(plan.ok()) << "parsed:\n" << text;
  return plan.ok() ? "" : plan.error();
}

} // namespace

//===----------------------------------------------------------------------===//
// Parsing and printing
//===----------------------------------------------------------------------===//

TEST(PlanTest, ParsesDocumentedExample) {
  Expected<Plan> plan = parsePlan(atrPlan);
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

TEST(PlanTest, PrintsWhatItParsed) {
  for (const char *text : {atrPlan, linearPlan}) {
    Expected<Plan> plan = parsePlan(text);
    ASSERT_TRUE(plan.ok()) << plan.error();
    EXPECT_EQ(printPlan(*plan), text);
    Expected<Plan> again = parsePlan(printPlan(*plan));
    ASSERT_TRUE(again.ok()) << again.error();
    EXPECT_EQ(printPlan(*again), text);
  }
}

TEST(PlanTest, ParsesOffsetsAndWidths) {
  Expected<Plan> plan = parsePlan(linearPlan);
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
  Expected<Plan> plan = parsePlan(text);
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

TEST(PlanErrorTest, Syntax) {
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "input x I", "inpt x I")),
            "plan line 4: unknown directive 'inpt'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "input x I", "input x  I")),
            "plan line 4: tokens must be separated by single spaces");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "input x I", "input x")),
            "plan line 4: 'input' takes 2 operands (input NAME LEN), got "
            "'input x'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "param Wx H I", "param Wx H 3*")),
            "plan line 6: malformed dimension expression '3*'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "param Wx H I", "param Wx H J")),
            "plan line 6: unknown dimension 'J' in 'J' (declare it in 'dims' "
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
            "plan line 8: param 'Wx' is declared twice (first on line 6)");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "output H\n", "")),
            "plan: missing 'output LEN'");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "output H", "output h")),
            "plan line 8: unknown dimension 'h' in 'h' (declare it in 'dims' "
            "first)");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "next:h out", "next:h")),
            "plan: no step operation writes the output ('out')");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "weight W1 Wh", "weight W1 Wh Wx")),
            "plan line 12: weight 'W1' stacks params with different COLS: "
            "'Wh' has H, 'Wx' has I");
  EXPECT_EQ(parseError(replaceOnce(atrPlan, "weight W1 Wh", "weight W1 Wq")),
            "plan line 12: weight 'W1' stacks unknown param 'Wq'");
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

const cellrt_kernel_fn linearKernels[] = {linearKernel};
const char *const linearKernelNames[] = {"lin_step"};

cellrt_image imageFor(const char *plan, int64_t numKernels = 1) {
  return {plan, linearKernels, linearKernelNames, numKernels};
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
    out.assign(steps * batch * hidden, 0.0f);
    finalState.assign(batch * hidden, 0.0f);
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
  Expected<Cell> broken = Cell::load(imageFor("cellc-plan 1\ncell x\n"));
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error(), "plan: missing 'dims' (write 'dims' alone if the "
                            "cell has no symbolic dimensions)");
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

TEST(ExecutorErrorTest, MisShapedArrays) {
  Expected<Cell> cell = Cell::load(imageFor(linearPlan));
  ASSERT_TRUE(cell.ok()) << cell.error();
  LinearProblem problem(2, 3, 4, 5, 1);
  std::vector<float> out(2 * 3 * 5), finalState(3 * 5);
  auto errorFor = [&](const std::function<void(ForwardArgs &)> &change) {
    ForwardArgs args = problem.args(out.data(), finalState.data(), false);
    change(args);
    Status status = cell->forward(args);
    EXPECT_FALSE(status.ok());
    return status.message();
  };
  EXPECT_EQ(errorFor([](ForwardArgs &a) {
              a.params["U"].shape = {5, 4};
            }),
            "param 'U' has shape [5, 4] but the plan expects [H, H] = [5, 5]");
  EXPECT_EQ(errorFor([](ForwardArgs &a) {
              a.params["b"].shape = {5, 1};
            }),
            "param 'b' has shape [5, 1] but the plan expects [H] = [5]");
  EXPECT_EQ(errorFor([](ForwardArgs &a) {
              a.initialStates[0].shape = {3, 6};
            }),
            "initial state 'h' has shape [3, 6] but the plan expects [B, H] = "
            "[3, 5]");
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

TEST(ExecutorErrorTest, ColumnsOutsideTheirArray) {
  LinearProblem problem(2, 3, 4, 5, 1);
  std::string narrow =
      replaceOnce(linearPlan, "buffer step q 2*H+1", "buffer step q H+1");
  Expected<Cell> narrowCell = Cell::load(imageFor(narrow.c_str()));
  ASSERT_TRUE(narrowCell.ok()) << narrowCell.error();
  Status status = narrowCell->forward(problem.args(nullptr, nullptr, false));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "plan line 16: gemm output 'step:q+H' needs columns [5, 10) but "
            "its array has 6");
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
