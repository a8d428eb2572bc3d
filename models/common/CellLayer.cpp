//===- models/common/CellLayer.cpp - A compiled cell as a layer ----------===//

#include "models/common/CellLayer.h"

#include "models/common/Data.h"
#include "models/common/Math.h"

#include <algorithm>

namespace models {

void check(const cellrt::Status &status, const char *what) {
  // An exception, not an abort: the driver reports it and a library user
  // (or a test) can recover.
  if (!status.ok())
    throw CellRuntimeError(std::string(what) + ": " + status.message());
}

std::vector<const float *> CellTrace::finalStatePointers() const {
  std::vector<const float *> pointers;
  for (const std::vector<float> &state : finalStates)
    pointers.push_back(state.data());
  return pointers;
}

namespace {

/// The symbol of an expression that is exactly one symbol (`H`), or "".
std::string singleSymbol(const cellrt::DimExpr &expr) {
  const auto &terms = expr.getTerms();
  if (expr.getConstant() == 0 && terms.size() == 1 && terms[0].second == 1)
    return terms[0].first;
  return "";
}

/// Binds `expr` to `value` when it is a free symbol; true when it then
/// evaluates to `value`.
bool bindOrMatch(const cellrt::DimExpr &expr, int64_t value,
                 std::map<std::string, int64_t> &dims) {
  std::string symbol = singleSymbol(expr);
  if (!symbol.empty() && !dims.count(symbol))
    dims[symbol] = value;
  auto known = expr.evaluate(dims);
  return known && *known == value;
}

} // namespace

CellLayer::CellLayer(const cellrt::Cell &cell, const std::string &prefix,
                     int64_t inputSize, int64_t stateSize, ParamStore &store,
                     bool reverse)
    : CellLayer(cell, prefix, std::vector<int64_t>{inputSize}, stateSize, store,
                reverse) {}

CellLayer::CellLayer(const cellrt::Cell &cell, const std::string &prefix,
                     const std::vector<int64_t> &inputWidths, int64_t stateSize,
                     ParamStore &store, bool reverse)
    : impl(&cell), reverse(reverse),
      what("cell " + cell.getPlan().cellName + " (" + prefix + ")"),
      sources(inputWidths), inputs(inputWidths) {
  const cellrt::Plan &plan = cell.getPlan();
  joined = plan.inputs.size() == 1 && inputWidths.size() > 1;
  if (joined) {
    int64_t sum = 0;
    for (int64_t width : inputWidths)
      sum += width;
    inputs = {sum};
  } else if (plan.inputs.size() != inputWidths.size()) {
    throw DataError(
        what + ": the cell has " + std::to_string(plan.inputs.size()) +
        " inputs, the model gives it " + std::to_string(inputWidths.size()));
  }
  if (!cell.hasBackward())
    throw DataError(what + ": compiled without backward directives");
  bindWidths(inputs, stateSize, prefix, store);
}

void CellLayer::joinSources(const std::vector<const float *> &given,
                            int64_t rows, std::vector<float> &out) const {
  const int64_t width = inputs[0];
  out.resize(rows * width);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0, offset = 0; k < sources.size(); offset += sources[k++])
      std::copy_n(given[k] + r * sources[k], sources[k],
                  out.data() + r * width + offset);
}

void CellLayer::forwardJoined(const CellSequence &sequence, CellTrace &trace,
                              bool train) const {
  joinSources(sequence.inputs, sequence.T * sequence.B, trace.joined);
  CellSequence inner = sequence;
  inner.inputs = {trace.joined.data()};
  forward(inner, trace, train);
}

CellLayer CellLayer::sharing(const CellLayer &owner, bool reverse) {
  CellLayer twin = owner;
  twin.reverse = reverse;
  twin.recorder = nullptr;
  return twin;
}

CellLayer CellLayer::overInputProducts(const CellLayer &owner,
                                       const cellrt::Cell &derived) {
  if (owner.projectsAnInput())
    throw DataError(owner.what + ": a projected input cannot be given as "
                                 "products");
  CellLayer layer = sharing(owner, owner.reverse);
  layer.impl = &derived;
  layer.joined = false;
  layer.sources.clear();
  for (const cellrt::VectorDecl &input : derived.getPlan().inputs)
    layer.sources.push_back(*input.length.evaluate(owner.boundDims));
  layer.inputs = layer.cellInputs = layer.sources;
  layer.projections.assign(layer.sources.size(), nullptr);
  return layer;
}

std::vector<Param *> CellLayer::weightParams(const std::string &weight,
                                             int64_t &rows,
                                             int64_t &cols) const {
  std::vector<Param *> parts;
  rows = cols = 0;
  for (const std::string &name : impl->getPlan().findWeight(weight)->params) {
    size_t index = std::find(names.begin(), names.end(), name) - names.begin();
    parts.push_back(params.at(index));
    rows += parts.back()->shape[0];
    cols = parts.back()->shape[1];
  }
  return parts;
}

void CellLayer::productForward(const cellrt::InputProduct &product,
                               const float *source, int64_t rows,
                               float *out) const {
  int64_t weightRows = 0, weightCols = 0;
  std::vector<float> stacked;
  for (const Param *part : weightParams(product.weight, weightRows, weightCols))
    stacked.insert(stacked.end(), part->value.begin(), part->value.end());
  linear(source, rows, weightCols, stacked.data(), weightRows, out, false);
}

void CellLayer::productBackward(const cellrt::InputProduct &product,
                                const float *source, int64_t rows,
                                const float *dOut, float *dSource) const {
  int64_t weightRows = 0, weightCols = 0;
  std::vector<Param *> parts =
      weightParams(product.weight, weightRows, weightCols);
  std::vector<float> stacked, dStacked(weightRows * weightCols, 0.f);
  for (const Param *part : parts)
    stacked.insert(stacked.end(), part->value.begin(), part->value.end());
  linearBackward(source, rows, weightCols, stacked.data(), weightRows, dOut,
                 dStacked.data(), dSource, /*accumulateDx=*/true);
  size_t offset = 0;
  for (Param *part : parts)
    for (float &value : part->grad)
      value += dStacked[offset++];
}

void CellLayer::bindWidths(const std::vector<int64_t> &inputWidths,
                           int64_t stateSize, const std::string &prefix,
                           ParamStore &store) {
  const cellrt::Plan &plan = impl->getPlan();
  std::map<std::string, int64_t> dims;
  for (const auto &state : plan.states)
    if (!bindOrMatch(state.length, stateSize, dims))
      throw DataError(what + ": state " + state.name + " of width " +
                      state.length.str() + " cannot be " +
                      std::to_string(stateSize) + " wide");
  for (size_t k = 0; k < plan.inputs.size(); ++k) {
    const auto &input = plan.inputs[k];
    projections.emplace_back();
    if (bindOrMatch(input.length, inputWidths[k], dims)) {
      cellInputs.push_back(inputWidths[k]);
      continue;
    }
    // The cell fixes this input's width (e.g. to the state's): project.
    auto required = input.length.evaluate(dims);
    if (!required)
      throw DataError(what + ": cannot bind input " + input.name + " [" +
                      input.length.str() + "] to width " +
                      std::to_string(inputWidths[k]));
    projections.back() = std::make_shared<Linear>(
        store, prefix + ".proj_" + input.name, inputWidths[k], *required,
        /*bias=*/false);
    cellInputs.push_back(*required);
  }
  for (const auto &state : plan.states)
    states.push_back(*state.length.evaluate(dims));
  boundDims = dims;
  auto out = plan.outputWidth.evaluate(dims);
  if (!out)
    throw DataError(what + ": cannot evaluate the output width " +
                    plan.outputWidth.str());
  output = *out;
  for (const auto &decl : plan.params) {
    std::vector<int64_t> shape;
    for (const auto &dim : decl.shape) {
      auto value = dim.evaluate(dims);
      if (!value)
        throw DataError(what + ": param " + decl.name +
                        " has the unbound "
                        "dim " +
                        dim.str());
      shape.push_back(*value);
    }
    params.push_back(&store.add(prefix + "." + decl.name, std::move(shape)));
    params.back()->init = decl.init; // what the cell file declares
    names.push_back(decl.name);
  }
}

std::map<std::string, cellrt::ConstArray> CellLayer::paramArrays() const {
  std::map<std::string, cellrt::ConstArray> arrays;
  for (size_t i = 0; i < names.size(); ++i)
    arrays[names[i]] = {params[i]->value.data(), params[i]->shape};
  return arrays;
}

std::map<std::string, cellrt::MutableArray> CellLayer::gradArrays() const {
  std::map<std::string, cellrt::MutableArray> arrays;
  for (size_t i = 0; i < names.size(); ++i)
    arrays[names[i]] = {params[i]->grad.data(), params[i]->shape};
  return arrays;
}

const float *CellLayer::cellInput(const CellSequence &sequence,
                                  CellTrace &trace, size_t k) const {
  const Linear *projection = projections[k].get();
  if (!projection) {
    trace.projected[k].clear();
    return sequence.inputs[k];
  }
  int64_t rows = sequence.T * sequence.B;
  trace.projected[k].resize(rows * cellInputs[k]);
  projection->forward(sequence.inputs[k], rows, trace.projected[k].data());
  return trace.projected[k].data();
}

void CellLayer::forward(const CellSequence &sequence, CellTrace &trace,
                        bool train) const {
  if (joined && sequence.inputs.size() == sources.size())
    return forwardJoined(sequence, trace, train);
  if (sequence.inputs.size() != inputs.size())
    throw CellRuntimeError(what + ": " + std::to_string(inputs.size()) +
                           " inputs expected, got " +
                           std::to_string(sequence.inputs.size()));
  const int64_t T = sequence.T, B = sequence.B;
  trace.T = T;
  trace.B = B;
  trace.rawInputs = sequence.inputs;
  trace.projected.resize(inputs.size());
  cellrt::ForwardArgs &args = trace.args;
  args = cellrt::ForwardArgs();
  for (size_t k = 0; k < inputs.size(); ++k)
    args.inputs.push_back(
        {cellInput(sequence, trace, k), {T, B, cellInputs[k]}});
  args.lengths = sequence.lengths;
  trace.finalStates.resize(states.size());
  for (size_t k = 0; k < states.size(); ++k) {
    const float *initial =
        k < sequence.initialStates.size() ? sequence.initialStates[k] : nullptr;
    args.initialStates.push_back({initial, {B, states[k]}});
    trace.finalStates[k].resize(B * states[k]);
    args.finalStates.push_back({trace.finalStates[k].data(), {B, states[k]}});
  }
  args.params = paramArrays();
  args.reverse = reverse;
  args.output = {sequence.output, {T, B, output}};
  args.packedWeights = sequence.packed;
  if (train) {
    check(impl->forward(args, trace.tape), what.c_str());
  } else if (recorder) {
    addProbeArrays(args, T, B);
    check(recorder->probed->forward(args), what.c_str());
  } else {
    check(impl->forward(args), what.c_str());
  }
}

void CellLayer::setProbeRecorder(ProbeRecorder *newRecorder) {
  if (newRecorder) {
    const cellrt::Plan &own = impl->getPlan(),
                       &probed = newRecorder->probed->getPlan();
    bool same = own.params.size() == probed.params.size();
    for (size_t k = 0; same && k < own.params.size(); ++k)
      same = own.params[k].name == probed.params[k].name &&
             own.params[k].shape == probed.params[k].shape;
    if (!same || own.states.size() != probed.states.size())
      throw DataError(what + ": the probed cell " + probed.cellName +
                      " is not the layer's cell " + own.cellName);
  }
  recorder = newRecorder;
}

void CellLayer::addProbeArrays(cellrt::ForwardArgs &args, int64_t T,
                               int64_t B) const {
  const std::vector<cellrt::VectorDecl> &probes =
      recorder->probed->getPlan().probes;
  ProbeRecorder::Call &call = recorder->calls.emplace_back();
  call.T = T;
  call.B = B;
  // Reserved: the arrays' addresses go into args.
  call.probes.reserve(probes.size());
  for (const cellrt::VectorDecl &probe : probes) {
    auto width = probe.length.evaluate(boundDims);
    if (!width)
      throw DataError(what + ": probe " + probe.name +
                      " has the unbound "
                      "width " +
                      probe.length.str());
    call.probes.emplace_back(T * B * *width);
    args.probes.push_back({call.probes.back().data(), {T, B, *width}});
  }
}

void CellLayer::backward(CellTrace &trace, const float *dOutput,
                         const std::vector<float *> &dInputs,
                         const std::vector<const float *> &dFinalStates,
                         const std::vector<float *> &dInitialStates) const {
  const int64_t T = trace.T, B = trace.B;
  cellrt::BackwardArgs grads;
  grads.outputGradient = {dOutput, {T, B, output}};
  for (size_t k = 0; k < states.size(); ++k) {
    if (k < dFinalStates.size())
      grads.finalStateGradients.push_back({dFinalStates[k], {B, states[k]}});
    if (k < dInitialStates.size())
      grads.initialStateGradients.push_back(
          {dInitialStates[k], {B, states[k]}});
  }
  // A projected input's gradient goes through its projection afterwards.
  std::vector<std::vector<float>> dProjected(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    float *target = k < dInputs.size() ? dInputs[k] : nullptr;
    if (projections[k]) {
      dProjected[k].assign(T * B * cellInputs[k], 0.f);
      target = dProjected[k].data();
    }
    grads.inputGradients.push_back({target, {T, B, cellInputs[k]}});
  }
  // Joined sources: the cell's input gradient is split among them after.
  std::vector<float> dJoined;
  std::vector<float *> dCellInputs = dInputs;
  if (joined) {
    dJoined.assign(T * B * inputs[0], 0.f);
    dCellInputs = {dJoined.data()};
    if (projections[0])
      grads.inputGradients[0].data = dProjected[0].data();
    else
      grads.inputGradients[0].data = dJoined.data();
  }
  grads.paramGradients = gradArrays();
  check(impl->backward(trace.args, grads, trace.tape), what.c_str());
  for (size_t k = 0; k < inputs.size(); ++k)
    if (projections[k])
      projections[k]->backward(trace.rawInputs[k], T * B, dProjected[k].data(),
                               k < dCellInputs.size() ? dCellInputs[k]
                                                      : nullptr);
  if (!joined)
    return;
  for (int64_t r = 0; r < T * B; ++r)
    for (size_t k = 0, offset = 0; k < sources.size(); offset += sources[k++])
      if (k < dInputs.size() && dInputs[k])
        for (int64_t i = 0; i < sources[k]; ++i)
          dInputs[k][r * sources[k] + i] += dJoined[r * inputs[0] + offset + i];
}

cellrt::PackedWeights CellLayer::packWeights(cellrt::PackFor purpose) const {
  auto packed = impl->packWeights(paramArrays(), purpose);
  check(packed.getStatus(), what.c_str());
  return std::move(*packed);
}

void CellLayer::step(const CellStep &step,
                     const cellrt::PackedWeights *packed) const {
  if (joined && step.inputs.size() == sources.size()) {
    std::vector<float> rows;
    joinSources(step.inputs, step.rows, rows);
    CellStep inner = step;
    inner.inputs = {rows.data()};
    return this->step(inner, packed);
  }
  if (step.inputs.size() != inputs.size())
    throw CellRuntimeError(what + ": " + std::to_string(inputs.size()) +
                           " inputs expected, got " +
                           std::to_string(step.inputs.size()));
  const int64_t rows = step.rows;
  cellrt::StepArgs args;
  args.packedWeights = packed;
  // Projected inputs are rare (fixed-width cell inputs): project them here.
  std::vector<std::vector<float>> projected(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const float *input = step.inputs[k];
    if (projections[k]) {
      projected[k].resize(rows * cellInputs[k]);
      projections[k]->forward(input, rows, projected[k].data());
      input = projected[k].data();
    }
    args.inputs.push_back({input, {rows, cellInputs[k]}});
  }
  for (size_t k = 0; k < states.size(); ++k) {
    const float *state = k < step.states.size() ? step.states[k] : nullptr;
    // Zeros are read as a [rows, width] state, whatever stateRows says.
    args.states.push_back({state, {state ? step.stateRows : rows, states[k]}});
    args.nextStates.push_back({step.nextStates.at(k), {rows, states[k]}});
  }
  args.sourceRows = step.sourceRows;
  args.params = paramArrays();
  args.output = {step.output, {rows, output}};
  check(impl->step(args), what.c_str());
}

} // namespace models
