//===- Step.cpp - One step of a batch of states ---------------------------===//
//
// A decoder advances its states one step at a time (the next input depends
// on the previous output). A step is a sequence of length 1 for every row,
// so it runs through the same plan and kernels as whole sequences; beam
// search's reordering of hypotheses is a gather of state rows first.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Device.h"
#include "cellrt/Runtime.h"

#include <algorithm>
#include <cstring>

using namespace cellrt;

static std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

namespace {

/// A step's ForwardArgs, kept per thread: a decoder calls step thousands of
/// times with the same params and shapes, and building the arguments anew
/// (a copy of the params map, a shape vector per array) was a third of a
/// small step's fixed cost. Arrays are assigned in place, and the params
/// map is copied only when it differs from the last call's.
struct StepScratch {
  ForwardArgs args;
  std::vector<int32_t> lengths;
  std::vector<std::vector<float>> gathered;
  /// The gathered states where the caller's are in a GPU's memory, and
  /// the device they are on.
  const Device *gatheredOn = nullptr;
  std::vector<DeviceArray> gatheredOnDevice;
};

template <typename Array, typename Pointer>
void setArray(std::vector<Array> &arrays, size_t index, Pointer data,
              std::initializer_list<int64_t> shape) {
  if (arrays.size() <= index)
    arrays.resize(index + 1);
  arrays[index].data = data;
  arrays[index].shape.assign(shape);
}

bool sameParams(const std::map<std::string, ConstArray> &a,
                const std::map<std::string, ConstArray> &b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const auto &x, const auto &y) {
                      return x.first == y.first &&
                             x.second.data == y.second.data &&
                             x.second.shape == y.second.shape;
                    });
}

/// Extent i of a step array's [B, LEN] shape; 0 where it is missing.
int64_t extent(const std::vector<int64_t> &shape, size_t i) {
  return i < shape.size() ? shape[i] : 0;
}

/// Rows sourceRows[0..batch) of `state` [?, width], gathered into the
/// scratch of state `index`: on the host, or on the device where the
/// caller's states are in its own memory.
/// The scratch keeps the device (and its last gather's memory) alive until
/// the thread steps a cell on another device, or ends.
Expected<float *> gatherStateRows(const Cell &cell, Device &device,
                                  StepScratch &scratch, size_t index,
                                  const float *state, const int32_t *sourceRows,
                                  int64_t batch, int64_t width, Memory memory) {
  if (memory == Memory::Host || device.sharesHostMemory()) {
    std::vector<float> &gathered = scratch.gathered[index];
    gathered.resize(batch * width);
    for (int64_t b = 0; b < batch; ++b)
      std::memcpy(&gathered[b * width], state + sourceRows[b] * width,
                  width * sizeof(float));
    return gathered.data();
  }
  if (scratch.gatheredOn != &device) {
    scratch.gatheredOnDevice.clear();
    scratch.gatheredOn = &device;
  }
  if (scratch.gatheredOnDevice.size() <= index)
    scratch.gatheredOnDevice.resize(index + 1);
  DeviceArray &gathered = scratch.gatheredOnDevice[index];
  if (gathered.size() < batch * width) {
    Expected<DeviceArray> grown = cell.allocateArray(batch * width);
    if (!grown)
      return grown.getStatus();
    gathered = std::move(*grown);
  }
  device.gatherRows(gathered.data(), state, sourceRows, batch, width);
  return gathered.data();
}

} // namespace

Status Cell::step(const StepArgs &args) const {
  if (args.inputs.size() != plan.inputs.size())
    return Status::error("cell '" + plan.cellName + "' takes " +
                         std::to_string(plan.inputs.size()) +
                         " inputs, got " + std::to_string(args.inputs.size()));
  thread_local StepScratch scratch;
  ForwardArgs &forwardArgs = scratch.args;
  int64_t batch = -1;
  forwardArgs.inputs.resize(args.inputs.size());
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const ConstArray &input = args.inputs[i];
    if (input.shape.size() != 2)
      return Status::error("input '" + plan.inputs[i].name +
                           "' of a step must be [B, LEN], got " +
                           shapeText(input.shape));
    if (batch < 0)
      batch = input.shape[0];
    setArray(forwardArgs.inputs, i, input.data,
             {1, input.shape[0], input.shape[1]});
  }
  scratch.lengths.assign(batch > 0 ? batch : 0, 1);
  // No inputs, no rows: null lengths, which forward() reports (a kept
  // vector's memory would be read past its end).
  forwardArgs.lengths = batch > 0 ? scratch.lengths.data() : nullptr;
  if (!sameParams(forwardArgs.params, args.params))
    forwardArgs.params = args.params;
  forwardArgs.paramsByIndex = args.paramsByIndex;

  // Beam search: gather each row's parent state. The states may have any
  // number of rows (the previous step's live hypotheses); the step has
  // `batch` rows, one per input row.
  forwardArgs.initialStates.resize(args.states.size());
  scratch.gathered.resize(args.states.size());
  for (size_t i = 0; i < args.states.size(); ++i) {
    const ConstArray &state = args.states[i];
    if (!args.sourceRows || !state.data || state.shape.size() != 2) {
      forwardArgs.initialStates[i] = state;
      continue;
    }
    int64_t rows = state.shape[0], width = state.shape[1];
    for (int64_t b = 0; b < batch; ++b) {
      int32_t source = args.sourceRows[b];
      if (source < 0 || source >= rows)
        return Status::error("sourceRows[" + std::to_string(b) +
                             "] = " + std::to_string(source) +
                             " is outside the " + std::to_string(rows) +
                             " rows of state '" + plan.states[i].name + "'");
    }
    Expected<float *> gathered =
        gatherStateRows(*this, *device, scratch, i, state.data, args.sourceRows,
                        std::max<int64_t>(batch, 0), width, args.memory);
    if (!gathered)
      return gathered.getStatus();
    setArray(forwardArgs.initialStates, i, *gathered, {batch, width});
  }
  forwardArgs.output.data = args.output.data;
  forwardArgs.output.shape.clear();
  if (args.output.data)
    forwardArgs.output.shape.assign({1, extent(args.output.shape, 0),
                                     extent(args.output.shape, 1)});
  forwardArgs.probes.resize(args.probes.size());
  for (size_t i = 0; i < args.probes.size(); ++i)
    setArray(forwardArgs.probes, i, args.probes[i].data,
             {1, extent(args.probes[i].shape, 0),
              extent(args.probes[i].shape, 1)});
  forwardArgs.finalStates = args.nextStates;
  forwardArgs.packedWeights = args.packedWeights;
  forwardArgs.memory = args.memory;
  return forward(forwardArgs);
}
