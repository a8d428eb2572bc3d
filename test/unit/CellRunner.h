//===- CellRunner.h - One cell call with every output asked for -*- C++ -*-===//
//
// Test helper: random arguments for any plan at small sizes with ragged
// lengths, and a forward (or training forward + backward) call that asks
// for every output and gradient, each array starting at 0.25 so that
// accumulation into the caller's arrays shows. Used to compare one cell on
// two devices.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_UNIT_CELLRUNNER_H
#define CELLC_TEST_UNIT_CELLRUNNER_H

#include "cellrt/Runtime.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace cellrt_test {

using namespace cellrt;

/// The whole of a text file; empty when it cannot be read.
inline std::string readTextFile(const std::string &path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

/// The sizes of one call: every dimension of the plan gets its own size,
/// firstDim, firstDim + 1, ... in the plan's order.
struct ProblemShape {
  int64_t T = 6, B = 4;
  int64_t firstDim = 5;
  std::vector<int32_t> lengths = {6, 3, 1, 5};
  /// Parameters are uniform in [-paramScale, paramScale]; inputs, states and
  /// gradients in [-0.5, 0.5]. At large widths, 1/sqrt(width) (as cells are
  /// initialised) keeps the recurrence from turning chaotic, where rounding
  /// differences of 1e-7 would grow to O(1) within a few dozen steps.
  float paramScale = 0.5f;
  /// Dims given their values here; the others count up from firstDim.
  std::map<std::string, int64_t> dims;
};

/// Random values for every array of one call at small, distinct sizes
/// (or at `sizes`).
struct Problem {
  Problem(const Plan &plan, uint32_t seed, const ProblemShape &sizes = {})
      : T(sizes.T), B(sizes.B), lengths(sizes.lengths) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
    auto fill = [&](int64_t count, float scale = 0.5f) {
      std::vector<float> values(count);
      for (float &value : values)
        value = uniform(rng) * (scale / 0.5f);
      return values;
    };
    int64_t next = sizes.firstDim;
    for (const std::string &dim : plan.dims) {
      auto given = sizes.dims.find(dim);
      dims[dim] = given != sizes.dims.end() ? given->second : next++;
    }
    auto eval = [&](const DimExpr &e) { return *e.evaluate(dims); };
    for (const VectorDecl &input : plan.inputs)
      inputs.push_back(fill(T * B * eval(input.length)));
    for (const VectorDecl &state : plan.states)
      states.push_back(fill(B * eval(state.length)));
    for (const ParamDecl &param : plan.params) {
      int64_t count = 1;
      std::vector<int64_t> shape;
      for (const DimExpr &extent : param.shape) {
        shape.push_back(eval(extent));
        count *= shape.back();
      }
      params[param.name] = {fill(count, sizes.paramScale), shape};
    }
    outputWidth = eval(plan.outputWidth);
    outputGradient = fill(T * B * outputWidth);
    for (const VectorDecl &state : plan.states)
      finalStateGradients.push_back(fill(B * eval(state.length)));
    for (const VectorDecl &input : plan.inputs)
      inputWidths.push_back(eval(input.length));
    for (const VectorDecl &state : plan.states)
      stateWidths.push_back(eval(state.length));
  }

  std::map<std::string, ConstArray> paramArrays() const {
    std::map<std::string, ConstArray> arrays;
    for (const auto &[name, param] : params)
      arrays[name] = {param.first.data(), param.second};
    return arrays;
  }

  ForwardArgs args(bool reverse) const {
    ForwardArgs a;
    for (size_t i = 0; i < inputs.size(); ++i)
      a.inputs.push_back({inputs[i].data(), {T, B, inputWidths[i]}});
    a.lengths = lengths.data();
    for (size_t i = 0; i < states.size(); ++i)
      a.initialStates.push_back({states[i].data(), {B, stateWidths[i]}});
    for (const auto &[name, param] : params)
      a.params[name] = {param.first.data(), param.second};
    a.reverse = reverse;
    return a;
  }

  int64_t T, B;
  std::vector<int32_t> lengths;
  std::map<std::string, int64_t> dims;
  std::vector<std::vector<float>> inputs, states, finalStateGradients;
  std::map<std::string, std::pair<std::vector<float>, std::vector<int64_t>>>
      params;
  std::vector<int64_t> inputWidths, stateWidths;
  int64_t outputWidth = 0;
  std::vector<float> outputGradient;
};

/// A call's arrays copied into a cell's device memory (Memory::Device):
/// every array gets a DeviceArray holding its host contents, and the ones
/// the call writes are copied back to the host arrays by download().
class OnDevice {
public:
  explicit OnDevice(const Cell &cell) : cell(cell) {}

  void move(ConstArray &array) { array.data = place(array, false); }
  void move(MutableArray &array) { array.data = place(array, true); }
  void move(ForwardArgs &args) {
    for (ConstArray &input : args.inputs)
      move(input);
    for (ConstArray &state : args.initialStates)
      move(state);
    for (auto &[name, param] : args.params)
      move(param);
    move(args.output);
    for (MutableArray &probe : args.probes)
      move(probe);
    for (MutableArray &state : args.finalStates)
      move(state);
    args.memory = Memory::Device;
  }
  void move(BackwardArgs &gradients) {
    move(gradients.outputGradient);
    for (ConstArray &gradient : gradients.finalStateGradients)
      move(gradient);
    for (MutableArray &gradient : gradients.inputGradients)
      move(gradient);
    for (MutableArray &gradient : gradients.initialStateGradients)
      move(gradient);
    for (auto &[name, gradient] : gradients.paramGradients)
      move(gradient);
    gradients.memory = Memory::Device;
  }
  void move(StepArgs &args) {
    for (ConstArray &input : args.inputs)
      move(input);
    for (ConstArray &state : args.states)
      move(state);
    for (auto &[name, param] : args.params)
      move(param);
    move(args.output);
    for (MutableArray &state : args.nextStates)
      move(state);
    args.memory = Memory::Device;
  }
  /// Copies every written array back to its host array.
  void download() {
    for (const Written &back : written) {
      Status status = arrays[back.array].download(back.host, back.count);
      EXPECT_TRUE(status.ok()) << status.message();
    }
  }

private:
  template <typename Array> float *place(const Array &array, bool writes) {
    if (!array.data)
      return nullptr;
    int64_t count = 1;
    for (int64_t extent : array.shape)
      count *= extent;
    Expected<DeviceArray> copy = cell.allocateArray(count);
    EXPECT_TRUE(copy.ok()) << copy.error();
    if (!copy)
      return nullptr;
    EXPECT_TRUE(copy->upload(array.data, count).ok());
    if (writes)
      written.push_back(
          {const_cast<float *>(array.data), arrays.size(), count});
    arrays.push_back(std::move(*copy));
    return arrays.back().data();
  }
  struct Written {
    float *host;
    size_t array;
    int64_t count;
  };
  const Cell &cell;
  std::vector<DeviceArray> arrays;
  std::vector<Written> written;
};

/// Everything one forward (and backward) call writes.
struct Results {
  std::vector<std::vector<float>> arrays;
};

/// Runs forward or forward+backward with every output and gradient asked
/// for; every array starts at 0.25 so accumulation is visible. Training
/// records into `kept` when given (its memory reused from earlier calls),
/// else into a new tape. Calls read `packed` weights when given.
inline Results run(const Cell &cell, const Problem &problem, bool reverse,
                   bool train, Tape *kept = nullptr,
                   const PackedWeights *packed = nullptr,
                   Memory memory = Memory::Host) {
  const Plan &plan = cell.getPlan();
  int64_t T = problem.T, B = problem.B;
  ForwardArgs args = problem.args(reverse);
  args.packedWeights = packed;
  Results results;
  auto &arrays = results.arrays;
  arrays.emplace_back(T * B * problem.outputWidth, 0.25f);
  args.output = {arrays.back().data(), {T, B, problem.outputWidth}};
  // Every probe (cellc --probe) the cell was compiled with.
  for (const VectorDecl &probe : plan.probes) {
    int64_t width = *probe.length.evaluate(problem.dims);
    arrays.emplace_back(T * B * width, 0.25f);
    args.probes.push_back({arrays.back().data(), {T, B, width}});
  }
  size_t firstFinal = arrays.size();
  for (size_t i = 0; i < plan.states.size(); ++i)
    arrays.emplace_back(B * problem.stateWidths[i], 0.25f);
  for (size_t i = 0; i < plan.states.size(); ++i)
    args.finalStates.push_back(
        {arrays[firstFinal + i].data(), {B, problem.stateWidths[i]}});
  OnDevice onDevice(cell);
  if (memory == Memory::Device)
    onDevice.move(args);
  if (!train) {
    Status status = cell.forward(args);
    EXPECT_TRUE(status.ok()) << status.message();
    onDevice.download();
    return results;
  }
  Tape fresh;
  Tape &tape = kept ? *kept : fresh;
  Status status = cell.forward(args, tape);
  EXPECT_TRUE(status.ok()) << status.message();
  BackwardArgs gradients;
  gradients.outputGradient = {problem.outputGradient.data(),
                              {T, B, problem.outputWidth}};
  for (size_t i = 0; i < plan.states.size(); ++i)
    gradients.finalStateGradients.push_back(
        {problem.finalStateGradients[i].data(), {B, problem.stateWidths[i]}});
  size_t first = arrays.size();
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    arrays.emplace_back(T * B * problem.inputWidths[i], 0.25f);
  for (size_t i = 0; i < plan.states.size(); ++i)
    arrays.emplace_back(B * problem.stateWidths[i], 0.25f);
  for (const ParamDecl &param : plan.params)
    arrays.emplace_back(problem.params.at(param.name).first.size(), 0.25f);
  size_t at = first;
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    gradients.inputGradients.push_back(
        {arrays[at++].data(), {T, B, problem.inputWidths[i]}});
  for (size_t i = 0; i < plan.states.size(); ++i)
    gradients.initialStateGradients.push_back(
        {arrays[at++].data(), {B, problem.stateWidths[i]}});
  for (const ParamDecl &param : plan.params)
    gradients.paramGradients[param.name] = {
        arrays[at++].data(), problem.params.at(param.name).second};
  if (memory == Memory::Device)
    onDevice.move(gradients);
  status = cell.backward(args, gradients, tape);
  EXPECT_TRUE(status.ok()) << status.message();
  onDevice.download();
  return results;
}

/// One decoding step (Cell::step) of every row, with the states read
/// through a beam reordering; with `packed` weights when given.
inline Results runStep(const Cell &cell, const Problem &problem,
                       const PackedWeights *packed = nullptr,
                       Memory memory = Memory::Host) {
  const Plan &plan = cell.getPlan();
  StepArgs args;
  for (size_t i = 0; i < plan.inputs.size(); ++i) // step 0 of each input
    args.inputs.push_back(
        {problem.inputs[i].data(), {problem.B, problem.inputWidths[i]}});
  for (size_t i = 0; i < plan.states.size(); ++i)
    args.states.push_back(
        {problem.states[i].data(), {problem.B, problem.stateWidths[i]}});
  std::vector<int32_t> parents;
  for (int64_t b = 0; b < problem.B; ++b)
    parents.push_back(int32_t((b * 3 + 1) % problem.B));
  args.sourceRows = parents.data();
  args.params = problem.paramArrays();
  args.packedWeights = packed;
  Results results;
  results.arrays.emplace_back(problem.B * problem.outputWidth, 0.25f);
  for (size_t i = 0; i < plan.states.size(); ++i)
    results.arrays.emplace_back(problem.B * problem.stateWidths[i], 0.25f);
  args.output = {results.arrays[0].data(), {problem.B, problem.outputWidth}};
  for (size_t i = 0; i < plan.states.size(); ++i)
    args.nextStates.push_back(
        {results.arrays[1 + i].data(), {problem.B, problem.stateWidths[i]}});
  OnDevice onDevice(cell);
  if (memory == Memory::Device)
    onDevice.move(args);
  Status status = cell.step(args);
  EXPECT_TRUE(status.ok()) << status.message();
  onDevice.download();
  return results;
}

} // namespace cellrt_test

#endif // CELLC_TEST_UNIT_CELLRUNNER_H
