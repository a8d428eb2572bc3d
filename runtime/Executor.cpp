//===- Executor.cpp - Run a plan over a padded batch ----------------------===//
//
// A forward call goes through three stages:
//   1. bind: derive the plan's dims from the shapes the caller passed and
//      check every array against them;
//   2. set up: allocate buffers and states, stack weights, reverse inputs
//      when running backwards, and resolve every operand of every operation
//      to a base pointer, row stride and per-step advance;
//   3. run: the `pre` operations over all T*B rows, then the `step`
//      operations for every step, swapping current and next states.
// Operations act on a range of rows so that a step could be split across
// threads; today the whole batch is one range. A backward pass will add its
// phases to the same machinery (keeping the states of every step).
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"
#include "cellrt/Runtime.h"

#include <algorithm>
#include <cstring>

using namespace cellrt;

static std::string quote(const std::string &text) { return "'" + text + "'"; }

static std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

static std::string shapeString(const std::vector<std::string> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + shape[i];
  return text + "]";
}

static std::string planError(const Operation &op, const std::string &message) {
  return "plan line " + std::to_string(op.line) + ": " + message;
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

Expected<Cell> Cell::load(const cellrt_image &image) {
  if (!image.plan)
    return Status::error("cellrt_image has no plan");
  Expected<Plan> plan = parsePlan(image.plan);
  if (!plan)
    return plan.getStatus();
  int64_t needed = plan->numKernelsUsed();
  if (image.num_kernels < needed)
    return Status::error("plan of cell " + quote(plan->cellName) +
                         " uses kernel " + std::to_string(needed - 1) +
                         " but the image has only " +
                         std::to_string(image.num_kernels) + " kernels");
  if (image.num_kernels > 0 && !image.kernels)
    return Status::error("cellrt_image has no kernel table");
  Cell cell;
  cell.plan = std::move(*plan);
  for (int64_t i = 0; i < image.num_kernels; ++i) {
    if (!image.kernels[i])
      return Status::error("kernel " + std::to_string(i) + " of cell " +
                           quote(cell.plan.cellName) + " is null");
    cell.kernels.push_back(image.kernels[i]);
    const char *name = image.kernel_names ? image.kernel_names[i] : nullptr;
    cell.kernelNames.push_back(name ? name : "");
  }
  return cell;
}

//===----------------------------------------------------------------------===//
// Binding dimensions
//===----------------------------------------------------------------------===//

namespace {

/// The sizes of one call: T, B and the value of every plan dim.
struct Sizes {
  int64_t steps = 0, batch = 0;
  std::map<std::string, int64_t> dims;

  int64_t eval(const DimExpr &expr) const { return *expr.evaluate(dims); }
};

/// One array the caller passed, to be matched against its declared shape.
struct ShapeConstraint {
  std::string label;
  std::vector<std::string> declaredText;
  std::vector<DimExpr> declared;
  std::vector<int64_t> actual;
};

/// Binds dims by solving one-unknown linear equations until nothing changes,
/// then checks every array against the result.
class DimBinder {
public:
  DimBinder(const Plan &plan, const ForwardArgs &args)
      : plan(plan), args(args) {}
  Expected<Sizes> bind();

private:
  Status collect();
  void add(const std::string &label, std::vector<std::string> text,
           std::vector<DimExpr> declared, const std::vector<int64_t> &actual);
  void addVector(const std::string &label, const DimExpr &length,
                 const std::vector<int64_t> &actual, bool perStep);
  bool solveOne(const DimExpr &expr, int64_t value);
  Status check(const ShapeConstraint &constraint) const;

  const Plan &plan;
  const ForwardArgs &args;
  Sizes sizes;
  std::vector<ShapeConstraint> constraints;
};

} // namespace

void DimBinder::add(const std::string &label, std::vector<std::string> text,
                    std::vector<DimExpr> declared,
                    const std::vector<int64_t> &actual) {
  constraints.push_back({label, std::move(text), std::move(declared), actual});
}

void DimBinder::addVector(const std::string &label, const DimExpr &length,
                          const std::vector<int64_t> &actual, bool perStep) {
  if (perStep)
    add(label, {"T", "B", length.str()},
        {DimExpr::constant(sizes.steps), DimExpr::constant(sizes.batch),
         length},
        actual);
  else
    add(label, {"B", length.str()}, {DimExpr::constant(sizes.batch), length},
        actual);
}

Status DimBinder::collect() {
  if (args.inputs.size() != plan.inputs.size())
    return Status::error("cell " + quote(plan.cellName) + " takes " +
                         std::to_string(plan.inputs.size()) + " inputs, got " +
                         std::to_string(args.inputs.size()));
  if (args.initialStates.size() > plan.states.size())
    return Status::error("cell " + quote(plan.cellName) + " has " +
                         std::to_string(plan.states.size()) + " states, got " +
                         std::to_string(args.initialStates.size()) +
                         " initial states");
  if (args.finalStates.size() > plan.states.size())
    return Status::error("cell " + quote(plan.cellName) + " has " +
                         std::to_string(plan.states.size()) + " states, got " +
                         std::to_string(args.finalStates.size()) +
                         " final states");

  // T and B come from the first input, or from the output.
  const std::vector<int64_t> *timeMajor = nullptr;
  std::string source;
  if (!args.inputs.empty()) {
    timeMajor = &args.inputs[0].shape;
    source = "input " + quote(plan.inputs[0].name);
  } else if (args.output.data) {
    timeMajor = &args.output.shape;
    source = "the output";
  }
  if (!timeMajor)
    return Status::error("cannot tell T and B: the cell has no inputs and no "
                         "output array was passed");
  if (timeMajor->size() != 3)
    return Status::error(source + " has shape " + shapeString(*timeMajor) +
                         " but must be [T, B, LEN]");
  sizes.steps = (*timeMajor)[0];
  sizes.batch = (*timeMajor)[1];
  if (sizes.steps < 1 || sizes.batch < 1)
    return Status::error(source + " has shape " + shapeString(*timeMajor) +
                         ": T and B must be at least 1");

  // Params first: when shapes disagree, blame the activations, not the
  // weights.
  for (const auto &entry : args.params)
    if (!plan.findParam(entry.first)) {
      std::string known;
      for (const ParamDecl &decl : plan.params)
        known += " " + decl.name;
      return Status::error("unknown param " + quote(entry.first) + " (cell " +
                           quote(plan.cellName) + " has params:" + known + ")");
    }
  for (const ParamDecl &param : plan.params) {
    auto it = args.params.find(param.name);
    if (it == args.params.end())
      return Status::error("missing param " + quote(param.name));
    if (!it->second.data)
      return Status::error("param " + quote(param.name) + " is null");
    std::vector<std::string> text;
    for (const DimExpr &extent : param.shape)
      text.push_back(extent.str());
    add("param " + quote(param.name), text, param.shape, it->second.shape);
  }
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    std::string label = "input " + quote(plan.inputs[i].name);
    if (!args.inputs[i].data)
      return Status::error(label + " is null");
    addVector(label, plan.inputs[i].length, args.inputs[i].shape, true);
  }
  for (size_t i = 0; i < args.initialStates.size(); ++i)
    if (args.initialStates[i].data)
      addVector("initial state " + quote(plan.states[i].name),
                plan.states[i].length, args.initialStates[i].shape, false);
  if (args.output.data)
    addVector("the output", plan.outputWidth, args.output.shape, true);
  for (size_t i = 0; i < args.finalStates.size(); ++i)
    if (args.finalStates[i].data)
      addVector("final state " + quote(plan.states[i].name),
                plan.states[i].length, args.finalStates[i].shape, false);
  return Status::success();
}

bool DimBinder::solveOne(const DimExpr &expr, int64_t value) {
  const DimExpr::Term *unknown = nullptr;
  int64_t known = expr.getConstant();
  for (const DimExpr::Term &term : expr.getTerms()) {
    auto it = sizes.dims.find(term.first);
    if (it != sizes.dims.end()) {
      known += term.second * it->second;
    } else if (unknown) {
      return false;
    } else {
      unknown = &term;
    }
  }
  if (!unknown || (value - known) % unknown->second != 0)
    return false;
  int64_t solution = (value - known) / unknown->second;
  if (solution < 1)
    return false;
  sizes.dims[unknown->first] = solution;
  return true;
}

Status DimBinder::check(const ShapeConstraint &constraint) const {
  bool matches = constraint.actual.size() == constraint.declared.size();
  std::vector<int64_t> expected;
  std::string unbound;
  for (size_t i = 0; i < constraint.declared.size(); ++i) {
    std::optional<int64_t> value = constraint.declared[i].evaluate(sizes.dims);
    if (!value) {
      for (const DimExpr::Term &term : constraint.declared[i].getTerms())
        if (!sizes.dims.count(term.first) && unbound.empty())
          unbound = term.first;
      matches = false;
      continue;
    }
    expected.push_back(*value);
    if (matches && constraint.actual[i] != *value)
      matches = false;
  }
  if (matches)
    return Status::success();
  std::string message =
      constraint.label + " has shape " + shapeString(constraint.actual) +
      " but the plan expects " + shapeString(constraint.declaredText);
  if (unbound.empty())
    message += " = " + shapeString(expected);
  else
    message += ", which no positive value of " + unbound + " matches";
  return Status::error(message);
}

Expected<Sizes> DimBinder::bind() {
  Status status = collect();
  if (!status.ok())
    return status;
  for (bool progress = true; progress;) {
    progress = false;
    for (const ShapeConstraint &constraint : constraints)
      for (size_t i = 0;
           i < constraint.declared.size() && i < constraint.actual.size(); ++i)
        progress |= solveOne(constraint.declared[i], constraint.actual[i]);
  }
  for (const ShapeConstraint &constraint : constraints)
    if (!(status = check(constraint)).ok())
      return status;
  for (const std::string &dim : plan.dims)
    if (!sizes.dims.count(dim))
      return Status::error("cannot tell the size of dimension " + quote(dim) +
                           " from the arrays passed");

  if (!args.lengths)
    return Status::error("lengths is null");
  for (int64_t b = 0; b < sizes.batch; ++b)
    if (args.lengths[b] < 1 || args.lengths[b] > sizes.steps)
      return Status::error("lengths[" + std::to_string(b) +
                           "] = " + std::to_string(args.lengths[b]) +
                           " is outside [1, T] = [1, " +
                           std::to_string(sizes.steps) + "]");
  return sizes;
}

Expected<std::vector<int64_t>> Cell::bindDims(const ForwardArgs &args) const {
  Expected<Sizes> sizes = DimBinder(plan, args).bind();
  if (!sizes)
    return sizes.getStatus();
  std::vector<int64_t> values;
  for (const std::string &dim : plan.dims)
    values.push_back(sizes->dims.at(dim));
  return values;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

namespace {

/// Where an operand's rows live: `base` (already at its column offset) plus
/// `stepAdvance` floats per time step, or the current/next value of a state.
struct Operand {
  enum class Source { Fixed, CurrentState, NextState };

  Source source = Source::Fixed;
  float *base = nullptr;
  int64_t stateIndex = 0;
  int64_t column = 0;
  int64_t stride = 0;
  int64_t stepAdvance = 0;
};

/// An operation with its operands resolved for this call.
struct BoundOperation {
  const Operation *op;
  std::vector<Operand> operands;
  /// Gemm only: the stacked weight and its shape.
  const float *weight = nullptr;
  int64_t weightRows = 0, weightCols = 0;
};

/// The buffers and bound operations of one forward call.
class Execution {
public:
  Execution(const Plan &plan, const std::vector<cellrt_kernel_fn> &kernels,
            const ForwardArgs &args, const Sizes &sizes)
      : plan(plan), kernels(kernels), args(args), sizes(sizes),
        rowsPerStep(sizes.batch) {}

  Status run();

private:
  void allocate();
  void reverseInputs();
  void stackWeights();
  Status bindOperations();
  Expected<Operand> bindOperand(const Operation &op, const Ref &ref);
  Status checkColumns(const Operation &op, const Ref &ref, int64_t columns,
                      const char *role) const;
  float *pointer(const Operand &operand, int64_t step) const;
  Status runOperation(const BoundOperation &bound, int64_t step,
                      int64_t rowBegin, int64_t rowEnd);
  void finish(int64_t maxLength);

  const Plan &plan;
  const std::vector<cellrt_kernel_fn> &kernels;
  const ForwardArgs &args;
  const Sizes &sizes;
  const int64_t rowsPerStep;
  std::vector<int64_t> dimValues;

  std::vector<std::vector<float>> storage;
  std::vector<float *> inputs, buffers, currentStates, nextStates;
  std::vector<const float *> weights;
  float *outputBase = nullptr;
  int64_t outputWidth = 0, outputStepAdvance = 0;
  std::vector<BoundOperation> preOperations, stepOperations;
  std::vector<float *> kernelPointers;
  std::vector<int64_t> kernelStrides;
};

} // namespace

float *Execution::pointer(const Operand &operand, int64_t step) const {
  switch (operand.source) {
  case Operand::Source::CurrentState:
    return currentStates[operand.stateIndex] + operand.column;
  case Operand::Source::NextState:
    return nextStates[operand.stateIndex] + operand.column;
  case Operand::Source::Fixed:
    break;
  }
  return operand.base + step * operand.stepAdvance;
}

static float *allocateIn(std::vector<std::vector<float>> &storage,
                         int64_t count) {
  storage.emplace_back(static_cast<size_t>(std::max<int64_t>(count, 1)), 0.0f);
  return storage.back().data();
}

void Execution::allocate() {
  int64_t steps = sizes.steps, batch = sizes.batch;
  for (const std::string &dim : plan.dims)
    dimValues.push_back(sizes.dims.at(dim));
  for (const BufferDecl &buffer : plan.buffers) {
    int64_t rows =
        buffer.extent == BufferDecl::Extent::Sequence ? steps * batch : batch;
    buffers.push_back(allocateIn(storage, rows * sizes.eval(buffer.length)));
  }
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t count = batch * sizes.eval(plan.states[i].length);
    currentStates.push_back(allocateIn(storage, count));
    nextStates.push_back(allocateIn(storage, count));
    if (i < args.initialStates.size() && args.initialStates[i].data)
      std::memcpy(currentStates.back(), args.initialStates[i].data,
                  count * sizeof(float));
  }
  outputWidth = sizes.eval(plan.outputWidth);
  if (!args.output.data) {
    // Nobody reads the output: one step's worth of scratch is enough.
    outputBase = allocateIn(storage, batch * outputWidth);
  } else if (args.reverse) {
    outputBase = allocateIn(storage, steps * batch * outputWidth);
    outputStepAdvance = batch * outputWidth;
  } else {
    outputBase = args.output.data;
    outputStepAdvance = batch * outputWidth;
  }
}

/// Copies `source` [T, B, width] into `target` with every sequence reversed
/// within its length; padded steps become zeros.
static void reverseWithinLengths(const float *source, float *target,
                                 int64_t steps, int64_t batch, int64_t width,
                                 const int32_t *lengths) {
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t b = 0; b < batch; ++b) {
      float *row = target + (t * batch + b) * width;
      if (t < lengths[b])
        std::memcpy(row, source + ((lengths[b] - 1 - t) * batch + b) * width,
                    width * sizeof(float));
      else
        std::memset(row, 0, width * sizeof(float));
    }
}

void Execution::reverseInputs() {
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    if (!args.reverse) {
      // Kernels take non-const pointers but never write inputs.
      inputs.push_back(const_cast<float *>(args.inputs[i].data));
      continue;
    }
    int64_t width = sizes.eval(plan.inputs[i].length);
    float *copy = allocateIn(storage, sizes.steps * sizes.batch * width);
    reverseWithinLengths(args.inputs[i].data, copy, sizes.steps, sizes.batch,
                         width, args.lengths);
    inputs.push_back(copy);
  }
}

void Execution::stackWeights() {
  for (const WeightDecl &weight : plan.weights) {
    if (weight.params.size() == 1) {
      weights.push_back(args.params.at(weight.params[0]).data);
      continue;
    }
    int64_t cols = sizes.eval(plan.weightCols(weight));
    float *stacked =
        allocateIn(storage, sizes.eval(plan.weightRows(weight)) * cols);
    float *row = stacked;
    for (const std::string &name : weight.params) {
      int64_t count = sizes.eval(plan.findParam(name)->shape[0]) * cols;
      std::memcpy(row, args.params.at(name).data, count * sizeof(float));
      row += count;
    }
    weights.push_back(stacked);
  }
}

Expected<Operand> Execution::bindOperand(const Operation &op, const Ref &ref) {
  Operand operand;
  int64_t width = sizes.eval(plan.arrayWidth(ref));
  operand.column = sizes.eval(ref.column);
  if (operand.column < 0 || operand.column > width)
    return Status::error(planError(
        op, "column offset of " + quote(ref.str()) + " is " +
                std::to_string(operand.column) + ", outside its array of " +
                std::to_string(width) + " columns"));
  operand.stride = width;
  bool perStep = op.phase == Phase::Step;
  switch (ref.kind) {
  case Ref::Kind::Input:
    operand.base = inputs[plan.inputIndex(ref.name)];
    operand.stepAdvance = perStep ? rowsPerStep * width : 0;
    break;
  case Ref::Kind::Seq:
    operand.base = buffers[plan.bufferIndex(ref.name)];
    operand.stepAdvance = perStep ? rowsPerStep * width : 0;
    break;
  case Ref::Kind::Step:
    operand.base = buffers[plan.bufferIndex(ref.name)];
    break;
  case Ref::Kind::State:
  case Ref::Kind::Next:
    operand.source = ref.kind == Ref::Kind::State
                         ? Operand::Source::CurrentState
                         : Operand::Source::NextState;
    operand.stateIndex = plan.stateIndex(ref.name);
    return operand;
  case Ref::Kind::Param: {
    const ParamDecl *param = plan.findParam(ref.name);
    operand.base = const_cast<float *>(args.params.at(ref.name).data);
    // A vector param is broadcast to every row.
    operand.stride = param->isMatrix() ? width : 0;
    break;
  }
  case Ref::Kind::Out:
    operand.base = outputBase;
    operand.stepAdvance = outputStepAdvance;
    break;
  }
  operand.base += operand.column;
  return operand;
}

Status Execution::checkColumns(const Operation &op, const Ref &ref,
                               int64_t columns, const char *role) const {
  int64_t width = sizes.eval(plan.arrayWidth(ref));
  int64_t first = sizes.eval(ref.column);
  if (first + columns <= width)
    return Status::success();
  return Status::error(
      planError(op, std::string("gemm ") + role + " " + quote(ref.str()) +
                        " needs " + "columns [" + std::to_string(first) + ", " +
                        std::to_string(first + columns) +
                        ") but its array has " + std::to_string(width)));
}

Status Execution::bindOperations() {
  size_t maxOperands = 0;
  for (const Operation &op : plan.operations) {
    BoundOperation bound{&op, {}};
    for (const Ref &ref : op.operands) {
      Expected<Operand> operand = bindOperand(op, ref);
      if (!operand)
        return operand.getStatus();
      bound.operands.push_back(*operand);
    }
    if (op.kind == Operation::Kind::Gemm) {
      const WeightDecl &weight = *plan.findWeight(op.weight);
      bound.weight = weights[plan.weightIndex(op.weight)];
      bound.weightRows = sizes.eval(plan.weightRows(weight));
      bound.weightCols = sizes.eval(plan.weightCols(weight));
      Status status;
      if (!(status =
                checkColumns(op, op.gemmOutput(), bound.weightRows, "output"))
               .ok() ||
          !(status =
                checkColumns(op, op.gemmInput(), bound.weightCols, "input"))
               .ok())
        return status;
    } else if (op.kernel >= static_cast<int64_t>(kernels.size())) {
      return Status::error(planError(op, "kernel " + std::to_string(op.kernel) +
                                             " is not in the image"));
    }
    maxOperands = std::max(maxOperands, op.operands.size());
    (op.phase == Phase::Pre ? preOperations : stepOperations)
        .push_back(std::move(bound));
  }
  kernelPointers.resize(maxOperands);
  kernelStrides.resize(maxOperands);
  return Status::success();
}

Status Execution::runOperation(const BoundOperation &bound, int64_t step,
                               int64_t rowBegin, int64_t rowEnd) {
  const Operation &op = *bound.op;
  if (op.kind == Operation::Kind::Gemm) {
    const Operand &out = bound.operands[0], &in = bound.operands[1];
    return detail::gemmTransposedWeight(
        rowEnd - rowBegin, bound.weightRows, bound.weightCols,
        pointer(in, step) + rowBegin * in.stride, in.stride, bound.weight,
        bound.weightCols, pointer(out, step) + rowBegin * out.stride,
        out.stride);
  }
  for (size_t i = 0; i < bound.operands.size(); ++i) {
    kernelPointers[i] = pointer(bound.operands[i], step);
    kernelStrides[i] = bound.operands[i].stride;
  }
  bool perStep = op.phase == Phase::Step;
  kernels[op.kernel](rowBegin, rowEnd, perStep ? step : 0,
                     perStep ? args.lengths : nullptr, dimValues.data(),
                     kernelPointers.data(), kernelStrides.data());
  return Status::success();
}

void Execution::finish(int64_t maxLength) {
  if (args.output.data) {
    // Steps no sequence reaches were skipped; their outputs are zeros.
    int64_t stepFloats = sizes.batch * outputWidth;
    std::memset(outputBase + maxLength * stepFloats, 0,
                (sizes.steps - maxLength) * stepFloats * sizeof(float));
    if (args.reverse)
      reverseWithinLengths(outputBase, args.output.data, sizes.steps,
                           sizes.batch, outputWidth, args.lengths);
  }
  for (size_t i = 0; i < args.finalStates.size(); ++i)
    if (args.finalStates[i].data)
      std::memcpy(args.finalStates[i].data, currentStates[i],
                  sizes.batch * sizes.eval(plan.states[i].length) *
                      sizeof(float));
}

Status Execution::run() {
  allocate();
  reverseInputs();
  stackWeights();
  Status status = bindOperations();
  if (!status.ok())
    return status;

  int64_t allRows = sizes.steps * sizes.batch;
  for (const BoundOperation &bound : preOperations)
    if (!(status = runOperation(bound, 0, 0, allRows)).ok())
      return status;

  // Steps at or past the longest sequence would only copy states.
  int64_t maxLength =
      *std::max_element(args.lengths, args.lengths + sizes.batch);
  for (int64_t step = 0; step < maxLength; ++step) {
    for (const BoundOperation &bound : stepOperations)
      if (!(status = runOperation(bound, step, 0, rowsPerStep)).ok())
        return status;
    std::swap(currentStates, nextStates);
  }
  finish(maxLength);
  return Status::success();
}

Status Cell::forward(const ForwardArgs &args) const {
  Expected<Sizes> sizes = DimBinder(plan, args).bind();
  if (!sizes)
    return sizes.getStatus();
  return Execution(plan, kernels, args, *sizes).run();
}
