//===- BoundCallsTest.cpp - Calls that reuse an earlier call's binding ----===//
//
// A Cell binds a shape's operations once (issue #44): a later call of the
// same shape only fills in its own arrays. Each call must still read and
// write its own arrays (inputs, params, output, states, packed weights),
// whatever the calls before it passed; params passed by index must give
// what params passed by name give.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Runtime.h"
#include "runtime/Execution.h"

#include "atr.h"
#include "gru.h"
#include "lstm.h"
#include "sru.h"

#include <gtest/gtest.h>

#include <random>

namespace {

/// Random arrays for one shape of a cell, and calls over them.
struct Arrays {
  const cellrt::Plan &plan;
  std::map<std::string, int64_t> dims;
  int64_t steps, batch;
  std::map<std::string, std::vector<float>> params;
  std::vector<std::vector<float>> inputs, states;
  std::vector<int32_t> lengths;

  Arrays(const cellrt::Cell &cell, std::map<std::string, int64_t> dimValues,
         int64_t steps, int64_t batch, unsigned seed)
      : plan(cell.getPlan()), dims(std::move(dimValues)), steps(steps),
        batch(batch) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
    auto random = [&](int64_t count) {
      std::vector<float> values(count);
      for (float &v : values)
        v = uniform(rng);
      return values;
    };
    for (const cellrt::ParamDecl &param : plan.params)
      params[param.name] = random(count(param.shape));
    for (const cellrt::VectorDecl &input : plan.inputs)
      inputs.push_back(random(steps * batch * width(input)));
    for (const cellrt::VectorDecl &state : plan.states)
      states.push_back(random(batch * width(state)));
    for (int64_t b = 0; b < batch; ++b)
      lengths.push_back(int32_t(1 + (b + seed) % steps));
  }

  int64_t width(const cellrt::VectorDecl &decl) const {
    return *decl.length.evaluate(dims);
  }
  int64_t count(const std::vector<cellrt::DimExpr> &shape) const {
    int64_t n = 1;
    for (const cellrt::DimExpr &dim : shape)
      n *= *dim.evaluate(dims);
    return n;
  }
  std::vector<int64_t> shape(const cellrt::ParamDecl &param) const {
    std::vector<int64_t> extents;
    for (const cellrt::DimExpr &dim : param.shape)
      extents.push_back(*dim.evaluate(dims));
    return extents;
  }
  int64_t outputWidth() const { return *plan.outputWidth.evaluate(dims); }

  std::map<std::string, cellrt::ConstArray> byName() const {
    std::map<std::string, cellrt::ConstArray> arrays;
    for (const cellrt::ParamDecl &param : plan.params)
      arrays[param.name] = {params.at(param.name).data(), shape(param)};
    return arrays;
  }
  std::vector<cellrt::ConstArray> byIndex() const {
    std::vector<cellrt::ConstArray> arrays;
    for (const cellrt::ParamDecl &param : plan.params)
      arrays.push_back({params.at(param.name).data(), shape(param)});
    return arrays;
  }

  /// A call's lengths, params (by index or by name) and inputs.
  cellrt::ForwardArgs callArgs(bool paramsByIndex) const {
    cellrt::ForwardArgs args;
    args.lengths = lengths.data();
    if (paramsByIndex)
      args.paramsByIndex = byIndex();
    else
      args.params = byName();
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      args.inputs.push_back(
          {inputs[i].data(), {steps, batch, width(plan.inputs[i])}});
    return args;
  }

  /// One forward over these arrays: the output (when `readOutput`), then
  /// the final states.
  std::vector<float> forward(const cellrt::Cell &cell, bool reverse,
                             bool readOutput, bool paramsByIndex,
                             const cellrt::PackedWeights *packed = nullptr) {
    cellrt::ForwardArgs args = callArgs(paramsByIndex);
    args.reverse = reverse;
    args.packedWeights = packed;
    std::vector<std::vector<float>> finals;
    for (size_t i = 0; i < plan.states.size(); ++i) {
      int64_t w = width(plan.states[i]);
      finals.emplace_back(batch * w);
      args.initialStates.push_back({states[i].data(), {batch, w}});
    }
    for (size_t i = 0; i < plan.states.size(); ++i)
      args.finalStates.push_back(
          {finals[i].data(), {batch, width(plan.states[i])}});
    std::vector<float> output(steps * batch * outputWidth());
    if (readOutput)
      args.output = {output.data(), {steps, batch, outputWidth()}};
    cellrt::Status status = cell.forward(args);
    EXPECT_TRUE(status.ok()) << status.message();
    if (!readOutput)
      output.clear();
    for (const std::vector<float> &state : finals)
      output.insert(output.end(), state.begin(), state.end());
    return output;
  }

  /// One training forward and backward (output gradient 1): the output,
  /// then the input and param gradients.
  std::vector<float> train(const cellrt::Cell &cell, cellrt::Tape &tape,
                           bool paramsByIndex) {
    cellrt::ForwardArgs args = callArgs(paramsByIndex);
    std::vector<float> output(steps * batch * outputWidth());
    args.output = {output.data(), {steps, batch, outputWidth()}};
    cellrt::Status status = cell.forward(args, tape);
    EXPECT_TRUE(status.ok()) << status.message();
    std::vector<float> dout(output.size(), 1.0f);
    cellrt::BackwardArgs grads;
    grads.outputGradient = {dout.data(), args.output.shape};
    std::vector<std::vector<float>> gradients;
    gradients.reserve(plan.inputs.size() + plan.params.size());
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
      gradients.emplace_back(inputs[i].size(), 0.0f);
      grads.inputGradients.push_back(
          {gradients.back().data(), args.inputs[i].shape});
    }
    for (const cellrt::ParamDecl &param : plan.params) {
      gradients.emplace_back(count(param.shape), 0.0f);
      grads.paramGradients[param.name] = {gradients.back().data(),
                                          shape(param)};
    }
    status = cell.backward(args, grads, tape);
    EXPECT_TRUE(status.ok()) << status.message();
    for (const std::vector<float> &gradient : gradients)
      output.insert(output.end(), gradient.begin(), gradient.end());
    return output;
  }
};

cellrt::Cell load(const cellrt_image &image) {
  auto cell = cellrt::Cell::load(image);
  EXPECT_TRUE(cell.ok()) << cell.error();
  return std::move(*cell);
}

/// Calls of one shape on one Cell, alternating their arrays under each
/// set of options (a binding reused with other arrays) and the options
/// (bindings made again), give bit for bit what each gives on a Cell of
/// its own, which binds it afresh.
void checkAlternatingCalls(const cellrt_image &image,
                           const std::map<std::string, int64_t> &dims) {
  cellrt::Cell shared = load(image);
  Arrays first(shared, dims, 5, 4, 1), second(shared, dims, 5, 4, 2);
  auto firstPacked = shared.packWeights(first.byName());
  auto secondPacked = shared.packWeights(second.byName());
  ASSERT_TRUE(firstPacked.ok() && secondPacked.ok());
  struct Options {
    bool reverse, readOutput, byIndex, packed;
  };
  std::vector<Options> options = {{false, true, false, false},
                                  {false, true, true, false},
                                  {true, true, false, false},
                                  {false, false, false, true},
                                  {true, true, true, true}};
  for (int round = 0; round < 2; ++round)
    for (size_t o = 0; o < options.size(); ++o)
      for (Arrays *arrays : {&first, &second, &first}) {
        const Options &call = options[o];
        cellrt::Cell fresh = load(image);
        auto freshPacked = fresh.packWeights(arrays->byName());
        ASSERT_TRUE(freshPacked.ok());
        const cellrt::PackedWeights *packed =
            arrays == &first ? &*firstPacked : &*secondPacked;
        std::vector<float> want = arrays->forward(
            fresh, call.reverse, call.readOutput, call.byIndex,
            call.packed ? &*freshPacked : nullptr);
        std::vector<float> got =
            arrays->forward(shared, call.reverse, call.readOutput,
                            call.byIndex, call.packed ? packed : nullptr);
        EXPECT_EQ(got, want) << "options " << o << ", round " << round
                             << (arrays == &first ? ", first" : ", second");
      }
}

} // namespace

TEST(BoundCalls, AlternatingArraysAndOptions) {
  checkAlternatingCalls(cellc_atr_image(), {{"H", 12}, {"I", 7}});
  checkAlternatingCalls(cellc_gru_image(), {{"H", 9}, {"I", 5}});
  checkAlternatingCalls(cellc_lstm_image(), {{"H", 10}, {"I", 6}});
  checkAlternatingCalls(cellc_sru_image(), {{"H", 11}});
}

TEST(BoundCalls, TiledStepsAlternatingArraysAndOptions) {
  // H = 16 splits into two blocks of 8: inference tiles (TiledSchedule),
  // whose description and prepared run are kept for the shape.
  if (!cellrt::detail::tiledStepsAvailable())
    GTEST_SKIP() << "built without libxsmm";
  cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::On);
  int64_t before = cellrt::detail::tiledStepCalls();
  checkAlternatingCalls(cellc_atr_image(), {{"H", 16}, {"I", 8}});
  checkAlternatingCalls(cellc_gru_image(), {{"H", 16}, {"I", 8}});
  checkAlternatingCalls(cellc_lstm_image(), {{"H", 16}, {"I", 8}});
  cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Auto);
  EXPECT_GT(cellrt::detail::tiledStepCalls() - before, 0)
      << "no call took the tiled steps";
}

TEST(BoundCalls, ScanDecodingStepsAlternatingArrays) {
  // A scan cell's decoding step (T = 1, packed weights) at a width whose
  // products tile: ScanSchedule keeps their description and run.
  if (!cellrt::detail::tiledStepsAvailable())
    GTEST_SKIP() << "built without libxsmm";
  cellrt::Cell shared = load(cellc_sru_image());
  std::map<std::string, int64_t> dims = {{"H", 512}};
  Arrays first(shared, dims, 1, 2, 1), second(shared, dims, 1, 2, 2);
  auto firstPacked = shared.packWeights(first.byName());
  auto secondPacked = shared.packWeights(second.byName());
  ASSERT_TRUE(firstPacked.ok() && secondPacked.ok());
  int64_t before = cellrt::detail::tiledStepCalls();
  for (int round = 0; round < 2; ++round)
    for (Arrays *arrays : {&first, &second, &first}) {
      cellrt::Cell fresh = load(cellc_sru_image());
      auto freshPacked = fresh.packWeights(arrays->byName());
      ASSERT_TRUE(freshPacked.ok());
      const cellrt::PackedWeights *packed =
          arrays == &first ? &*firstPacked : &*secondPacked;
      std::vector<float> want =
          arrays->forward(fresh, false, true, false, &*freshPacked);
      EXPECT_EQ(arrays->forward(shared, false, true, false, packed), want)
          << "round " << round << (arrays == &first ? ", first" : ", second");
    }
  EXPECT_GT(cellrt::detail::tiledStepCalls() - before, 0)
      << "no step tiled its products";
}

TEST(BoundCalls, SameShapeBindsOnce) {
  cellrt::Cell cell = load(cellc_gru_image());
  Arrays first(cell, {{"H", 9}, {"I", 5}}, 5, 4, 1),
      second(cell, {{"H", 9}, {"I", 5}}, 5, 4, 2),
      longer(cell, {{"H", 9}, {"I", 5}}, 7, 4, 3);
  first.forward(cell, false, true, false);
  int64_t before = cellrt::detail::forwardBindings();
  second.forward(cell, false, true, false);
  first.forward(cell, false, true, false);
  EXPECT_EQ(cellrt::detail::forwardBindings() - before, 0)
      << "a call of a shape already bound binds again";
  longer.forward(cell, false, true, false);
  EXPECT_EQ(cellrt::detail::forwardBindings() - before, 1)
      << "a call of another shape must bind";
}

TEST(BoundCalls, ShapesCalledInTurnBindEachOnce) {
  // The NMT decoder's two layers share one Cell and take turns at every
  // step, with other input widths: each shape must stay bound.
  cellrt::Cell cell = load(cellc_gru_image());
  Arrays lower(cell, {{"H", 9}, {"I", 5}}, 1, 4, 1),
      upper(cell, {{"H", 9}, {"I", 13}}, 1, 4, 2),
      sequence(cell, {{"H", 9}, {"I", 5}}, 6, 3, 3);
  std::vector<Arrays *> turns = {&lower, &upper, &sequence};
  for (Arrays *arrays : turns)
    arrays->forward(cell, false, true, false);
  int64_t before = cellrt::detail::forwardBindings();
  for (int round = 0; round < 3; ++round)
    for (Arrays *arrays : turns) {
      cellrt::Cell fresh = load(cellc_gru_image());
      EXPECT_EQ(arrays->forward(cell, false, true, false),
                arrays->forward(fresh, false, true, false))
          << "round " << round;
    }
  // The fresh cells bind once per call; the shared one not at all.
  EXPECT_EQ(cellrt::detail::forwardBindings() - before, 3 * 3)
      << "a shape bound before, called in turn with others, binds again";
}

TEST(BoundCalls, TrainingAlternatingArraysOnOneTape) {
  for (const cellrt_image &image : {cellc_gru_image(), cellc_lstm_image()}) {
    cellrt::Cell shared = load(image);
    Arrays first(shared, {{"H", 9}, {"I", 5}}, 5, 4, 1),
        second(shared, {{"H", 9}, {"I", 5}}, 5, 4, 2);
    cellrt::Tape tape;
    for (int round = 0; round < 2; ++round)
      for (Arrays *arrays : {&first, &second}) {
        cellrt::Cell fresh = load(image);
        cellrt::Tape freshTape;
        std::vector<float> want = arrays->train(fresh, freshTape, false);
        EXPECT_EQ(arrays->train(shared, tape, round == 1), want)
            << "round " << round;
      }
  }
}

TEST(BoundCalls, ParamsByIndexEqualByName) {
  cellrt::Cell cell = load(cellc_lstm_image());
  Arrays arrays(cell, {{"H", 10}, {"I", 6}}, 4, 3, 5);
  EXPECT_EQ(arrays.forward(cell, false, true, true),
            arrays.forward(cell, false, true, false));

  cellrt::StepArgs step;
  step.paramsByIndex = arrays.byIndex();
  const cellrt::Plan &plan = cell.getPlan();
  step.inputs.push_back({arrays.inputs[0].data(), {3, 6}});
  std::vector<std::vector<float>> next(plan.states.size(),
                                       std::vector<float>(30));
  for (size_t i = 0; i < plan.states.size(); ++i) {
    step.states.push_back({arrays.states[i].data(), {3, 10}});
    step.nextStates.push_back({next[i].data(), {3, 10}});
  }
  ASSERT_TRUE(cell.step(step).ok());
  std::vector<std::vector<float>> byIndex = next;
  step.paramsByIndex.clear();
  step.params = arrays.byName();
  ASSERT_TRUE(cell.step(step).ok());
  EXPECT_EQ(byIndex, next);
}

TEST(BoundCalls, ParamsByIndexCountChecked) {
  cellrt::Cell cell = load(cellc_gru_image());
  Arrays arrays(cell, {{"H", 9}, {"I", 5}}, 3, 2, 1);
  cellrt::ForwardArgs args;
  args.lengths = arrays.lengths.data();
  args.paramsByIndex = arrays.byIndex();
  args.paramsByIndex.pop_back();
  args.inputs.push_back({arrays.inputs[0].data(), {3, 2, 5}});
  cellrt::Status status = cell.forward(args);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("in paramsByIndex"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find(std::to_string(cell.getPlan().params.size()) +
                                  " params"),
            std::string::npos)
      << status.message();
}
