//===- StepTest.cpp - Stepping a compiled cell equals running the sequence -===//
//
// Decoders call Cell::step once per position; a loop of T steps must give
// what one call over the whole sequence gives (same plan, same kernels), and
// beam reordering must equal stepping the reordered states.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Runtime.h"
#include "runtime/TiledSteps.h"

#include "atr.h"
#include "gru.h"
#include "lstm.h"
#include "sru.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

struct Problem {
  cellrt::Cell cell;
  int64_t steps = 6, batch = 5;
  std::map<std::string, int64_t> dims;
  std::map<std::string, std::vector<float>> params;
  std::vector<std::vector<float>> inputs, states;
  std::mt19937 rng{3};

  explicit Problem(cellrt::Cell cell, std::map<std::string, int64_t> dims)
      : cell(std::move(cell)), dims(std::move(dims)) {
    const cellrt::Plan &plan = this->cell.getPlan();
    for (const cellrt::ParamDecl &param : plan.params) {
      int64_t count = 1;
      for (const cellrt::DimExpr &dim : param.shape)
        count *= *dim.evaluate(this->dims);
      params[param.name] = random(count);
    }
    for (const cellrt::VectorDecl &input : plan.inputs)
      inputs.push_back(random(steps * batch * width(input)));
    for (const cellrt::VectorDecl &state : plan.states)
      states.push_back(random(batch * width(state)));
  }

  int64_t width(const cellrt::VectorDecl &decl) const {
    return *decl.length.evaluate(dims);
  }
  int64_t outputWidth() const {
    return *cell.getPlan().outputWidth.evaluate(dims);
  }
  std::vector<float> random(int64_t count) {
    std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
    std::vector<float> values(count);
    for (float &v : values)
      v = uniform(rng);
    return values;
  }
  std::map<std::string, cellrt::ConstArray> paramArrays() const {
    std::map<std::string, cellrt::ConstArray> arrays;
    for (const cellrt::ParamDecl &param : cell.getPlan().params) {
      std::vector<int64_t> shape;
      for (const cellrt::DimExpr &dim : param.shape)
        shape.push_back(*dim.evaluate(dims));
      arrays[param.name] = {params.at(param.name).data(), shape};
    }
    return arrays;
  }
};

void expectClose(const std::vector<float> &a, const std::vector<float> &b,
                 const char *what) {
  ASSERT_EQ(a.size(), b.size());
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, double(std::fabs(a[i] - b[i])));
    scale = std::max(scale, double(std::fabs(b[i])));
  }
  EXPECT_LE(worst / scale, 1e-6) << what;
}

/// T calls of step() against one forward() over the sequence.
void checkStepping(const cellrt_image &image,
                   std::map<std::string, int64_t> dims) {
  auto loaded = cellrt::Cell::load(image);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  Problem p(std::move(*loaded), std::move(dims));
  const cellrt::Plan &plan = p.cell.getPlan();
  int64_t out = p.outputWidth();

  cellrt::ForwardArgs sequence;
  std::vector<int32_t> lengths(p.batch, p.steps);
  sequence.lengths = lengths.data();
  sequence.params = p.paramArrays();
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    sequence.inputs.push_back(
        {p.inputs[i].data(), {p.steps, p.batch, p.width(plan.inputs[i])}});
  std::vector<std::vector<float>> finals;
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t w = p.width(plan.states[i]);
    sequence.initialStates.push_back({p.states[i].data(), {p.batch, w}});
    finals.emplace_back(p.batch * w);
  }
  for (size_t i = 0; i < plan.states.size(); ++i)
    sequence.finalStates.push_back(
        {finals[i].data(), {p.batch, p.width(plan.states[i])}});
  std::vector<float> sequenceOut(p.steps * p.batch * out);
  sequence.output = {sequenceOut.data(), {p.steps, p.batch, out}};
  cellrt::Status status = p.cell.forward(sequence);
  ASSERT_TRUE(status.ok()) << status.message();

  // T steps, with the weights stacked on every step or packed once.
  auto stepThrough = [&](const cellrt::PackedWeights *packed,
                         std::vector<float> &steppedOut,
                         std::vector<std::vector<float>> &current) {
    std::vector<std::vector<float>> next = p.states;
    current = p.states;
    steppedOut.assign(p.steps * p.batch * out, 0.0f);
    for (int64_t t = 0; t < p.steps; ++t) {
      cellrt::StepArgs step;
      step.params = p.paramArrays();
      step.packedWeights = packed;
      for (size_t i = 0; i < plan.inputs.size(); ++i) {
        int64_t w = p.width(plan.inputs[i]);
        step.inputs.push_back(
            {p.inputs[i].data() + t * p.batch * w, {p.batch, w}});
      }
      for (size_t i = 0; i < plan.states.size(); ++i) {
        int64_t w = p.width(plan.states[i]);
        step.states.push_back({current[i].data(), {p.batch, w}});
        step.nextStates.push_back({next[i].data(), {p.batch, w}});
      }
      step.output = {steppedOut.data() + t * p.batch * out, {p.batch, out}};
      cellrt::Status stepped = p.cell.step(step);
      ASSERT_TRUE(stepped.ok()) << stepped.message();
      std::swap(current, next);
    }
  };
  std::vector<float> steppedOut;
  std::vector<std::vector<float>> current;
  stepThrough(nullptr, steppedOut, current);
  expectClose(steppedOut, sequenceOut, "outputs");
  for (size_t i = 0; i < plan.states.size(); ++i)
    expectClose(current[i], finals[i], "final states");

  // Weights packed once (stacked, and on the CPU also packed for oneDNN's
  // matmul for the products, which then add in another order) give what
  // stacking on every call gives, over the sequence and step by step.
  auto packed = p.cell.packWeights(p.paramArrays());
  ASSERT_TRUE(packed.ok()) << packed.error();
  std::map<std::string, cellrt::ConstArray> arrays = p.paramArrays();
  for (size_t w = 0; w < plan.weights.size(); ++w) {
    int64_t rows = 0, cols = arrays.at(plan.weights[w].params[0]).shape[1];
    for (const std::string &name : plan.weights[w].params)
      rows += arrays.at(name).shape[0];
    EXPECT_NE(packed->product(w, rows, cols), nullptr) << "weight " << w;
    // Sizes other than the packed ones get none.
    EXPECT_EQ(packed->product(w, rows + 1, cols), nullptr);
  }
  cellrt::ForwardArgs withPacked = sequence;
  withPacked.packedWeights = &*packed;
  std::vector<float> packedOut(sequenceOut.size());
  withPacked.output.data = packedOut.data();
  std::vector<std::vector<float>> packedFinals = finals;
  for (size_t i = 0; i < plan.states.size(); ++i)
    withPacked.finalStates[i].data = packedFinals[i].data();
  status = p.cell.forward(withPacked);
  ASSERT_TRUE(status.ok()) << status.message();
  expectClose(packedOut, sequenceOut, "outputs, packed weights");
  for (size_t i = 0; i < plan.states.size(); ++i)
    expectClose(packedFinals[i], finals[i], "final states, packed weights");
  stepThrough(&*packed, steppedOut, current);
  expectClose(steppedOut, sequenceOut, "stepped outputs, packed weights");
  for (size_t i = 0; i < plan.states.size(); ++i)
    expectClose(current[i], finals[i], "stepped final states, packed weights");
}

/// Reordering rows by sourceRows equals stepping permuted states. With
/// `extraRows`, the states have more rows than the step (a beam whose
/// previous step had more live hypotheses).
void checkBeamReorder(const cellrt_image &image,
                      std::map<std::string, int64_t> dims,
                      int64_t extraRows = 0) {
  auto loaded = cellrt::Cell::load(image);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  Problem p(std::move(*loaded), std::move(dims));
  const cellrt::Plan &plan = p.cell.getPlan();
  std::vector<int32_t> parents = {2, 2, 0, 4, 1};
  if (extraRows) {
    parents = {int32_t(p.batch + extraRows - 1), 2, 0, int32_t(p.batch), 1};
    for (size_t i = 0; i < plan.states.size(); ++i) {
      std::vector<float> more = p.random(extraRows * p.width(plan.states[i]));
      p.states[i].insert(p.states[i].end(), more.begin(), more.end());
    }
  }
  auto run = [&](bool gatherInside) {
    cellrt::StepArgs step;
    step.params = p.paramArrays();
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      step.inputs.push_back(
          {p.inputs[i].data(), {p.batch, p.width(plan.inputs[i])}});
    std::vector<std::vector<float>> permuted(plan.states.size()),
        next(plan.states.size());
    for (size_t i = 0; i < plan.states.size(); ++i) {
      int64_t w = p.width(plan.states[i]);
      permuted[i].resize(p.batch * w);
      for (int64_t b = 0; b < p.batch; ++b)
        std::copy_n(&p.states[i][parents[b] * w], w, &permuted[i][b * w]);
      step.states.push_back(
          {gatherInside ? p.states[i].data() : permuted[i].data(),
           {gatherInside ? p.batch + extraRows : p.batch, w}});
      next[i].resize(p.batch * w);
      step.nextStates.push_back({next[i].data(), {p.batch, w}});
    }
    if (gatherInside)
      step.sourceRows = parents.data();
    cellrt::Status status = p.cell.step(step);
    EXPECT_TRUE(status.ok()) << status.message();
    return next;
  };
  auto inside = run(true), outside = run(false);
  for (size_t i = 0; i < inside.size(); ++i)
    EXPECT_EQ(inside[i], outside[i]);
}

} // namespace

TEST(CellStep, AtrSteppingEqualsSequence) {
  checkStepping(cellc_atr_image(), {{"H", 12}, {"I", 7}});
}
TEST(CellStep, GruSteppingEqualsSequence) {
  checkStepping(cellc_gru_image(), {{"H", 9}, {"I", 5}});
}
TEST(CellStep, LstmSteppingEqualsSequence) {
  checkStepping(cellc_lstm_image(), {{"H", 10}, {"I", 6}});
}
TEST(CellStep, SruScanEqualsSteps) {
  // The sequence runs as one time-scan kernel, the steps as step kernels.
  checkStepping(cellc_sru_image(), {{"H", 11}});
}
TEST(CellStep, BeamReorderGathersParents) {
  checkBeamReorder(cellc_gru_image(), {{"H", 9}, {"I", 5}});
}
TEST(CellStep, BeamGatherFromMoreRowsThanTheStep) {
  checkBeamReorder(cellc_gru_image(), {{"H", 9}, {"I", 5}}, 3);
  checkBeamReorder(cellc_lstm_image(), {{"H", 10}, {"I", 6}}, 2);
}

/// The first step of `p` with `params`, from p.states or (withStates
/// false) from zeros, through step() or, for the reference, forward() over
/// a sequence of length 1: the output, then each next state.
std::vector<float>
firstStep(Problem &p, const std::map<std::string, cellrt::ConstArray> &params,
          bool throughStep, bool withStates = false) {
  const cellrt::Plan &plan = p.cell.getPlan();
  std::vector<float> out(p.batch * p.outputWidth());
  std::vector<std::vector<float>> next;
  std::vector<cellrt::ConstArray> states;
  std::vector<cellrt::MutableArray> nextStates;
  for (size_t i = 0; i < plan.states.size() && withStates; ++i) {
    int64_t w = p.width(plan.states[i]);
    next.emplace_back(p.batch * w);
    states.push_back({p.states[i].data(), {p.batch, w}});
    nextStates.push_back({next.back().data(), {p.batch, w}});
  }
  cellrt::Status status;
  if (throughStep) {
    cellrt::StepArgs step;
    step.params = params;
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      step.inputs.push_back(
          {p.inputs[i].data(), {p.batch, p.width(plan.inputs[i])}});
    step.output = {out.data(), {p.batch, p.outputWidth()}};
    step.states = states;
    step.nextStates = nextStates;
    status = p.cell.step(step);
  } else {
    cellrt::ForwardArgs sequence;
    std::vector<int32_t> lengths(p.batch, 1);
    sequence.lengths = lengths.data();
    sequence.params = params;
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      sequence.inputs.push_back(
          {p.inputs[i].data(), {1, p.batch, p.width(plan.inputs[i])}});
    sequence.output = {out.data(), {1, p.batch, p.outputWidth()}};
    sequence.initialStates = states;
    sequence.finalStates = nextStates;
    status = p.cell.forward(sequence);
  }
  EXPECT_TRUE(status.ok()) << status.message();
  for (const std::vector<float> &state : next)
    out.insert(out.end(), state.begin(), state.end());
  return out;
}

TEST(CellStep, EachCallUsesItsOwnCellAndParams) {
  // step() keeps its arguments per thread between calls; alternating cells
  // and param arrays on one thread must still use each call's own.
  auto atr = cellrt::Cell::load(cellc_atr_image());
  auto gru = cellrt::Cell::load(cellc_gru_image());
  ASSERT_TRUE(atr.ok() && gru.ok());
  Problem a(std::move(*atr), {{"H", 12}, {"I", 7}});
  Problem g(std::move(*gru), {{"H", 9}, {"I", 5}});
  auto first = a.paramArrays();
  std::map<std::string, std::vector<float>> scaled = a.params;
  for (auto &[name, values] : scaled)
    for (float &v : values)
      v *= 2;
  auto second = first;
  for (auto &[name, array] : second)
    array.data = scaled.at(name).data();
  std::vector<float> wantFirst = firstStep(a, first, false),
                     wantSecond = firstStep(a, second, false),
                     wantStates = firstStep(a, first, false, true),
                     wantGru = firstStep(g, g.paramArrays(), false, true);
  ASSERT_NE(wantFirst, wantSecond);
  for (int round = 0; round < 2; ++round) {
    expectClose(firstStep(a, first, true), wantFirst, "first params");
    expectClose(firstStep(a, first, true, true), wantStates, "states");
    expectClose(firstStep(a, second, true), wantSecond, "second params");
    expectClose(firstStep(g, g.paramArrays(), true, true), wantGru, "GRU");
  }
}

/// Kernels split rows across threads, and the tiled steps split hidden
/// units into blocks whose math does not depend on the team; either way
/// every value is computed by the same code, so 1 and 2 threads must agree
/// to the bit, forward and backward, under each schedule. (The default
/// mode picks the schedule by thread count for training: see
/// runtime/TiledSteps.h.)
void checkThreadsAgree(const cellrt_image &image,
                       std::map<std::string, int64_t> dims, bool tiles) {
  auto loaded = cellrt::Cell::load(image);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  Problem p(std::move(*loaded), std::move(dims));
  p.batch = 64;
  p.steps = 5;
  const cellrt::Plan &plan = p.cell.getPlan();
  std::vector<std::vector<float>> inputs, states;
  for (const cellrt::VectorDecl &input : plan.inputs)
    inputs.push_back(p.random(p.steps * p.batch * p.width(input)));
  for (const cellrt::VectorDecl &state : plan.states)
    states.push_back(p.random(p.batch * p.width(state)));
  std::vector<int32_t> lengths(p.batch);
  for (int64_t b = 0; b < p.batch; ++b)
    lengths[b] = 1 + b % p.steps;
  int64_t out = p.outputWidth();
  auto run = [&](int threads, bool training) {
    cellrt::setNumThreads(threads);
    cellrt::ForwardArgs args;
    args.lengths = lengths.data();
    args.params = p.paramArrays();
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      args.inputs.push_back(
          {inputs[i].data(), {p.steps, p.batch, p.width(plan.inputs[i])}});
    for (size_t i = 0; i < plan.states.size(); ++i)
      args.initialStates.push_back(
          {states[i].data(), {p.batch, p.width(plan.states[i])}});
    std::vector<float> output(p.steps * p.batch * out);
    args.output = {output.data(), {p.steps, p.batch, out}};
    std::vector<float> result = output;
    if (!training) {
      EXPECT_TRUE(p.cell.forward(args).ok());
      return output;
    }
    cellrt::Tape tape;
    EXPECT_TRUE(p.cell.forward(args, tape).ok());
    std::vector<float> dout(output.size(), 1.0f);
    cellrt::BackwardArgs grads;
    grads.outputGradient = {dout.data(), {p.steps, p.batch, out}};
    std::vector<std::vector<float>> dinputs;
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
      dinputs.emplace_back(inputs[i].size(), 0.0f);
      grads.inputGradients.push_back(
          {dinputs.back().data(), args.inputs[i].shape});
    }
    EXPECT_TRUE(p.cell.backward(args, grads, tape).ok());
    for (const std::vector<float> &d : dinputs)
      result.insert(result.end(), d.begin(), d.end());
    return result;
  };
  using cellrt::detail::TiledMode;
  for (TiledMode mode : {TiledMode::Off, TiledMode::On}) {
    cellrt::detail::setTiledSteps(mode);
    int64_t tiledBefore = cellrt::detail::tiledStepCalls();
    for (bool training : {false, true}) {
      std::vector<float> one = run(1, training), two = run(2, training);
      EXPECT_EQ(one, two) << (training ? "training" : "inference")
                          << (mode == TiledMode::On ? ", tiled" : "");
    }
    // Each run(threads, training) is one call, or a forward and a backward.
    bool tiled = mode == TiledMode::On && tiles &&
                 cellrt::detail::tiledStepsAvailable();
    EXPECT_EQ(cellrt::detail::tiledStepCalls() - tiledBefore, tiled ? 6 : 0);
  }
  cellrt::detail::setTiledSteps(TiledMode::Auto);
  cellrt::setNumThreads(1);
}

TEST(CellThreads, GruRowsSplitAcrossThreadsAgree) {
  checkThreadsAgree(cellc_gru_image(), {{"H", 256}, {"I", 32}},
                    /*tiles=*/true);
}
TEST(CellThreads, SruScanSplitAcrossThreadsAgrees) {
  checkThreadsAgree(cellc_sru_image(), {{"H", 512}}, /*tiles=*/false);
}
