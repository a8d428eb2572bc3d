//===- Step.cpp - One step of a batch of states ---------------------------===//
//
// A decoder advances its states one step at a time (the next input depends
// on the previous output). A step is a sequence of length 1 for every row,
// so it runs through the same plan and kernels as whole sequences; beam
// search's reordering of hypotheses is a gather of state rows first.
//
//===----------------------------------------------------------------------===//

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

Status Cell::step(const StepArgs &args) const {
  if (args.inputs.size() != plan.inputs.size())
    return Status::error("cell '" + plan.cellName + "' takes " +
                         std::to_string(plan.inputs.size()) +
                         " inputs, got " + std::to_string(args.inputs.size()));
  ForwardArgs forwardArgs;
  int64_t batch = -1;
  for (size_t i = 0; i < args.inputs.size(); ++i) {
    const ConstArray &input = args.inputs[i];
    if (input.shape.size() != 2)
      return Status::error("input '" + plan.inputs[i].name +
                           "' of a step must be [B, LEN], got " +
                           shapeText(input.shape));
    if (batch < 0)
      batch = input.shape[0];
    forwardArgs.inputs.push_back(
        {input.data, {1, input.shape[0], input.shape[1]}});
  }
  std::vector<int32_t> lengths(batch > 0 ? batch : 0, 1);
  forwardArgs.lengths = lengths.data();
  forwardArgs.params = args.params;

  // Beam search: gather each row's parent state. The states may have any
  // number of rows (the previous step's live hypotheses); the step has
  // `batch` rows, one per input row.
  std::vector<std::vector<float>> gathered(args.states.size());
  for (size_t i = 0; i < args.states.size(); ++i) {
    const ConstArray &state = args.states[i];
    if (!args.sourceRows || !state.data || state.shape.size() != 2) {
      forwardArgs.initialStates.push_back(state);
      continue;
    }
    int64_t rows = state.shape[0], width = state.shape[1];
    gathered[i].resize(std::max<int64_t>(batch, 0) * width);
    for (int64_t b = 0; b < batch; ++b) {
      int32_t source = args.sourceRows[b];
      if (source < 0 || source >= rows)
        return Status::error("sourceRows[" + std::to_string(b) + "] = " +
                             std::to_string(source) + " is outside the " +
                             std::to_string(rows) + " rows of state '" +
                             plan.states[i].name + "'");
      std::memcpy(&gathered[i][b * width], state.data + source * width,
                  width * sizeof(float));
    }
    forwardArgs.initialStates.push_back({gathered[i].data(), {batch, width}});
  }
  if (args.output.data)
    forwardArgs.output = {args.output.data,
                          {1, args.output.shape.empty() ? 0
                                                        : args.output.shape[0],
                           args.output.shape.size() > 1 ? args.output.shape[1]
                                                        : 0}};
  for (const MutableArray &probe : args.probes)
    forwardArgs.probes.push_back(
        {probe.data,
         {1, probe.shape.empty() ? 0 : probe.shape[0],
          probe.shape.size() > 1 ? probe.shape[1] : 0}});
  forwardArgs.finalStates = args.nextStates;
  forwardArgs.packedWeights = args.packedWeights;
  return forward(forwardArgs);
}
