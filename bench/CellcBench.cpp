//===- CellcBench.cpp - cellc's compiled cells through cellrt -------------===//
//
// The cells are compiled by `cellc` at build time (bench/CMakeLists.txt) and
// linked in; each workload loads its image once and runs Cell::forward,
// forward(args, tape) + backward(args, grads, tape), or Cell::step.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include "cellrt/Runtime.h"

#include "atr.h"
#include "gru.h"
#include "lau.h"
#include "lstm.h"
#include "srnmt.h"
#include "sru.h"

#include <cstdlib>
#include <map>
#include <numeric>

using namespace cellc_bench;

namespace {

void check(const cellrt::Status &status, const char *what) {
  if (!status.ok())
    fail(std::string(what) + ": " + status.message());
}

class CellcRunner : public Runner {
public:
  CellcRunner(cellrt::Cell loaded, const Workload &w, cellrt::Memory memory)
      : cell(std::move(loaded)), w(w) {
    const cellrt::Plan &plan = cell.getPlan();
    std::map<std::string, int64_t> dims = {{"H", w.H}, {"I", w.I}};
    auto eval = [&](const cellrt::DimExpr &e) {
      std::optional<int64_t> v = e.evaluate(dims);
      if (!v)
        fail("cannot evaluate " + e.str());
      return *v;
    };
    uint32_t seed = 1;
    float scale = 1.0f / std::sqrt(static_cast<float>(w.H));
    for (const cellrt::ParamDecl &param : plan.params) {
      std::vector<int64_t> shape;
      for (const cellrt::DimExpr &dim : param.shape)
        shape.push_back(eval(dim));
      int64_t count = std::accumulate(shape.begin(), shape.end(), int64_t(1),
                                      std::multiplies<int64_t>());
      paramData[param.name] = randomVector(count, scale, seed++);
      paramShapes[param.name] = shape;
      if (w.mode == Mode::Training)
        gradData[param.name].assign(count, 0.0f);
    }
    for (auto &[name, data] : paramData) {
      args.params[name] = {data.data(), paramShapes[name]};
      step.params[name] = {data.data(), paramShapes[name]};
    }
    for (auto &[name, data] : gradData)
      grads.paramGradients[name] = {data.data(), paramShapes[name]};

    outputWidth = eval(plan.outputWidth);
    for (const cellrt::VectorDecl &input : plan.inputs)
      inputWidths.push_back(eval(input.length));
    for (const cellrt::VectorDecl &state : plan.states)
      stateWidths.push_back(eval(state.length));

    if (w.mode == Mode::Step) {
      for (size_t i = 0; i < inputWidths.size(); ++i) {
        inputs.push_back(randomVector(w.B * inputWidths[i], 1.0f, seed++));
        step.inputs.push_back({inputs.back().data(), {w.B, inputWidths[i]}});
      }
      for (size_t i = 0; i < stateWidths.size(); ++i) {
        current.push_back(randomVector(w.B * stateWidths[i], 0.5f, seed++));
        next.push_back(std::vector<float>(w.B * stateWidths[i]));
        currentStates.push_back(current.back().data());
        nextStates.push_back(next.back().data());
      }
      output.assign(w.B * outputWidth, 0.0f);
      step.output = {output.data(), {w.B, outputWidth}};
      // A decoder's weights are fixed while it decodes: stack them once,
      // as the peers hold theirs stacked.
      auto stacked = cell.packWeights(step.params);
      check(stacked.getStatus(), "packWeights");
      packed = std::move(*stacked);
      step.packedWeights = &packed;
      // Beam search reorders the hypotheses every step.
      if (w.B > 1)
        for (int64_t b = 0; b < w.B; ++b)
          parents.push_back(static_cast<int32_t>((b * 7 + 3) % w.B));
      if (memory == cellrt::Memory::Device)
        moveStepToDevice();
      return;
    }

    lengths.assign(w.B, static_cast<int32_t>(w.T));
    args.lengths = lengths.data();
    for (size_t i = 0; i < inputWidths.size(); ++i) {
      inputs.push_back(
          randomVector(w.T * w.B * inputWidths[i], 1.0f, seed++));
      args.inputs.push_back({inputs.back().data(), {w.T, w.B, inputWidths[i]}});
    }
    output.assign(w.T * w.B * outputWidth, 0.0f);
    args.output = {output.data(), {w.T, w.B, outputWidth}};
    if (w.mode == Mode::Forward) {
      // Inference reads fixed weights: pack them once, as oneDNN's RNN
      // primitive's are (and the tiled steps keep their panels there).
      auto stacked = cell.packWeights(args.params);
      check(stacked.getStatus(), "packWeights");
      packed = std::move(*stacked);
      args.packedWeights = &packed;
    }
    if (w.mode == Mode::Training) {
      outputGradient = randomVector(w.T * w.B * outputWidth, 1.0f, seed++);
      grads.outputGradient = {outputGradient.data(), {w.T, w.B, outputWidth}};
      for (size_t i = 0; i < inputWidths.size(); ++i) {
        inputGradients.push_back(
            std::vector<float>(w.T * w.B * inputWidths[i], 0.0f));
        grads.inputGradients.push_back(
            {inputGradients.back().data(), {w.T, w.B, inputWidths[i]}});
      }
    }
    if (memory == cellrt::Memory::Device)
      moveSequenceToDevice();
  }

  void run() override {
    switch (w.mode) {
    case Mode::Forward:
      check(cell.forward(args), "forward");
      return;
    case Mode::Training:
      check(cell.forward(args, tape), "forward (training)");
      check(cell.backward(args, grads, tape), "backward");
      return;
    case Mode::Step:
      for (int64_t s = 0; s < w.stepsPerRun; ++s) {
        step.states.clear();
        step.nextStates.clear();
        for (size_t i = 0; i < stateWidths.size(); ++i) {
          step.states.push_back({currentStates[i], {w.B, stateWidths[i]}});
          step.nextStates.push_back({nextStates[i], {w.B, stateWidths[i]}});
        }
        step.sourceRows = parents.empty() ? nullptr : parents.data();
        check(cell.step(step), "step");
        std::swap(currentStates, nextStates);
      }
      return;
    }
  }

private:
  /// `data` [count] copied into the cell's device memory, kept for the
  /// runner's life: the caller's arrays of Memory::Device calls.
  float *onDevice(const float *data, int64_t count) {
    auto array = cell.allocateArray(count);
    check(array.getStatus(), "allocateArray");
    check(array->upload(data, count), "upload");
    resident.push_back(std::move(*array));
    return resident.back().data();
  }
  template <typename Array> void move(Array &array, int64_t count) {
    if (array.data)
      array.data = onDevice(array.data, count);
  }
  /// Every array of the sequence calls on the device, as a caller whose
  /// tensors live on the GPU has them: no call copies any.
  void moveSequenceToDevice() {
    for (size_t i = 0; i < args.inputs.size(); ++i)
      move(args.inputs[i], w.T * w.B * inputWidths[i]);
    for (auto &[name, param] : args.params)
      move(param, int64_t(paramData[name].size()));
    move(args.output, int64_t(output.size()));
    move(grads.outputGradient, int64_t(outputGradient.size()));
    for (size_t i = 0; i < grads.inputGradients.size(); ++i)
      move(grads.inputGradients[i], w.T * w.B * inputWidths[i]);
    for (auto &[name, gradient] : grads.paramGradients)
      move(gradient, int64_t(gradData[name].size()));
    args.memory = grads.memory = cellrt::Memory::Device;
  }
  void moveStepToDevice() {
    for (size_t i = 0; i < step.inputs.size(); ++i)
      move(step.inputs[i], w.B * inputWidths[i]);
    for (auto &[name, param] : step.params)
      move(param, int64_t(paramData[name].size()));
    move(step.output, int64_t(output.size()));
    for (size_t i = 0; i < stateWidths.size(); ++i) {
      currentStates[i] = onDevice(current[i].data(), w.B * stateWidths[i]);
      nextStates[i] = onDevice(next[i].data(), w.B * stateWidths[i]);
    }
    step.memory = cellrt::Memory::Device;
  }

  cellrt::Cell cell;
  Workload w;
  std::vector<cellrt::DeviceArray> resident;
  std::vector<float *> currentStates, nextStates;
  std::map<std::string, std::vector<float>> paramData, gradData;
  std::map<std::string, std::vector<int64_t>> paramShapes;
  std::vector<int64_t> inputWidths, stateWidths;
  int64_t outputWidth = 0;
  std::vector<std::vector<float>> inputs, inputGradients, current, next;
  std::vector<float> output, outputGradient;
  std::vector<int32_t> lengths, parents;
  cellrt::ForwardArgs args;
  cellrt::BackwardArgs grads;
  cellrt::StepArgs step;
  cellrt::PackedWeights packed;
  cellrt::Tape tape;
};

/// cellc as shipped (`mode` "auto": the tiled steps where
/// runtime/TiledSteps.h chooses them) or with the per-step schedule only
/// ("0", the default before the tiles). The switch is set in the
/// workload's own child before cellrt first reads it, here: every
/// implementation's setThreads runs in every child.
/// In bf16 (Cell::withPrecision) the products read bfloat16: measured in
/// training, where issue #16 sets its target.
Factory cellcWith(const char *mode,
                  cellrt::Precision precision = cellrt::Precision::F32) {
  return [mode, precision](const Workload &w,
                           std::string &why) -> std::unique_ptr<Runner> {
    setenv("CELLRT_TILED_STEPS", mode, 1);
    cellrt_image image;
    if (!cellImage(w.cell, image)) {
      why = "cell-not-compiled";
      return nullptr;
    }
    if (precision != cellrt::Precision::F32 && w.mode != Mode::Training) {
      why = "bf16-measured-in-training-only";
      return nullptr;
    }
    auto loaded = cellrt::Cell::load(image);
    if (loaded)
      loaded = loaded->withPrecision(precision);
    if (!loaded)
      fail("load " + w.cell + ": " + loaded.error());
    return makeCellRunner(std::move(*loaded), w, cellrt::Memory::Host);
  };
}

Register reg({"cellc", cellcWith("auto"),
              [](int threads) { setOmpThreads(threads); }, prewarmSgemm});
Register untiled({"cellc-untiled", cellcWith("0"),
                  [](int threads) { setOmpThreads(threads); }, prewarmSgemm});
Register bf16({"cellc-bf16", cellcWith("auto", cellrt::Precision::BF16),
               [](int threads) { setOmpThreads(threads); }, prewarmSgemm});

} // namespace

std::unique_ptr<Runner> cellc_bench::makeCellRunner(cellrt::Cell &&cell,
                                                    const Workload &w,
                                                    cellrt::Memory memory) {
  return std::make_unique<CellcRunner>(std::move(cell), w, memory);
}

bool cellc_bench::cellImage(const std::string &cell, cellrt_image &image) {
  if (cell == "atr")
    image = cellc_atr_image();
  else if (cell == "gru")
    image = cellc_gru_image();
  else if (cell == "lstm")
    image = cellc_lstm_image();
  else if (cell == "lau")
    image = cellc_lau_image();
  else if (cell == "sru")
    image = cellc_sru_image();
  else if (cell == "srnmt")
    image = cellc_srnmt_image();
  else
    return false;
  return true;
}
