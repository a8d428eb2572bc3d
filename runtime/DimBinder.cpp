//===- DimBinder.cpp - Dims from the shapes a caller passes ---------------===//

#include "DimBinder.h"
#include "PlanLayout.h"

#include <algorithm>

using namespace cellrt;
using namespace cellrt::detail;

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
  bool byIndex = !args.paramsByIndex.empty();
  if (byIndex && args.paramsByIndex.size() != plan.params.size())
    return Status::error("cell " + quote(plan.cellName) + " has " +
                         std::to_string(plan.params.size()) +
                         " params, got " +
                         std::to_string(args.paramsByIndex.size()) +
                         " in paramsByIndex");
  for (const auto &entry : args.params)
    if (!byIndex && !plan.findParam(entry.first)) {
      std::string known;
      for (const ParamDecl &decl : plan.params)
        known += " " + decl.name;
      return Status::error("unknown param " + quote(entry.first) + " (cell " +
                           quote(plan.cellName) + " has params:" + known + ")");
    }
  for (size_t i = 0; i < plan.params.size(); ++i) {
    const ParamDecl &param = plan.params[i];
    auto it = args.params.find(param.name);
    if (!byIndex && it == args.params.end())
      return Status::error("missing param " + quote(param.name));
    const ConstArray &array = byIndex ? args.paramsByIndex[i] : it->second;
    if (!array.data)
      return Status::error("param " + quote(param.name) + " is null");
    std::vector<std::string> text;
    for (const DimExpr &extent : param.shape)
      text.push_back(extent.str());
    add("param " + quote(param.name), text, param.shape, array.shape);
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
  if (args.probes.size() > plan.probes.size())
    return Status::error(
        std::to_string(args.probes.size()) + " probe arrays for cell " +
        quote(plan.cellName) + ", which was compiled with " +
        std::to_string(plan.probes.size()) + " probes (cellc --probe)");
  for (size_t i = 0; i < args.probes.size(); ++i)
    if (args.probes[i].data)
      addVector("probe " + quote(plan.probes[i].name), plan.probes[i].length,
                args.probes[i].shape, true);
  for (size_t i = 0; i < args.finalStates.size(); ++i)
    if (args.finalStates[i].data)
      addVector("final state " + quote(plan.states[i].name),
                plan.states[i].length, args.finalStates[i].shape, false);
  return Status::success();
}

bool DimBinder::solveOne(const DimExpr &expr, int64_t value,
                         const ShapeConstraint &from) {
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
  sizes.boundBy[unknown->first] = {from.label, from.actual};
  return true;
}

/// Matches an array's shape against its declared one under `sizes`.
Status cellrt::detail::checkConstraint(const ShapeConstraint &constraint,
                              const Sizes &sizes) {
  bool matches = constraint.actual.size() == constraint.declared.size();
  std::vector<int64_t> expected;
  std::string unbound;
  // Where a dim's value came from another array: both arrays are named.
  std::string boundElsewhere;
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
    if (i < constraint.actual.size() && constraint.actual[i] != *value) {
      matches = false;
      for (const DimExpr::Term &term : constraint.declared[i].getTerms()) {
        auto source = sizes.boundBy.find(term.first);
        if (boundElsewhere.empty() && source != sizes.boundBy.end() &&
            source->second.label != constraint.label)
          boundElsewhere = "; dimension " + term.first + " = " +
                           std::to_string(sizes.dims.at(term.first)) +
                           " comes from " + source->second.label + " " +
                           shapeString(source->second.shape);
      }
    }
  }
  if (matches)
    return Status::success();
  std::string message =
      constraint.label + " has shape " + shapeString(constraint.actual) +
      " but the plan expects " + shapeString(constraint.declaredText);
  if (unbound.empty())
    message += " = " + shapeString(expected) + boundElsewhere;
  else
    message += ", which no positive value of " + unbound + " matches";
  return Status::error(message);
}

Status DimBinder::check(const ShapeConstraint &constraint) const {
  return checkConstraint(constraint, sizes);
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
        progress |= solveOne(constraint.declared[i], constraint.actual[i],
                             constraint);
  }
  for (const ShapeConstraint &constraint : constraints)
    if (!(status = check(constraint)).ok())
      return status;
  for (const std::string &dim : plan.dims)
    if (!sizes.dims.count(dim))
      return Status::error("cannot tell the size of dimension " + quote(dim) +
                           " from the arrays passed");

  if (!(status = checkLengths(args, sizes)).ok())
    return status;
  sizes.layout = std::make_shared<const PlanLayout>(plan, sizes);
  if (args.paramsByIndex.empty())
    for (const auto &entry : args.params)
      sizes.paramOrder.push_back(
          int32_t(plan.findParam(entry.first) - plan.params.data()));
  return sizes;
}

Status cellrt::detail::checkLengths(const ForwardArgs &args,
                                    const Sizes &sizes) {
  if (!args.lengths)
    return Status::error("lengths is null");
  for (int64_t b = 0; b < sizes.batch; ++b)
    if (args.lengths[b] < 1 || args.lengths[b] > sizes.steps)
      return Status::error("lengths[" + std::to_string(b) +
                           "] = " + std::to_string(args.lengths[b]) +
                           " is outside [1, T] = [1, " +
                           std::to_string(sizes.steps) + "]");
  return Status::success();
}

/// Everything DimBinder reads but the lengths and the param names: each
/// array's presence and shape, in a fixed order, with the counts first.
static void shapeSignature(const ForwardArgs &args,
                           std::vector<int64_t> &signature) {
  signature.clear();
  auto addArray = [&](const void *data, const std::vector<int64_t> &shape) {
    signature.push_back(data ? int64_t(shape.size()) : -1);
    if (data)
      signature.insert(signature.end(), shape.begin(), shape.end());
  };
  signature.push_back(int64_t(args.inputs.size()));
  signature.push_back(int64_t(args.initialStates.size()));
  signature.push_back(int64_t(args.probes.size()));
  signature.push_back(int64_t(args.finalStates.size()));
  signature.push_back(int64_t(args.params.size()));
  signature.push_back(int64_t(args.paramsByIndex.size()));
  for (const ConstArray &input : args.inputs)
    addArray(input.data, input.shape);
  for (const ConstArray &state : args.initialStates)
    addArray(state.data, state.shape);
  addArray(args.output.data, args.output.shape);
  for (const MutableArray &probe : args.probes)
    addArray(probe.data, probe.shape);
  for (const MutableArray &state : args.finalStates)
    addArray(state.data, state.shape);
  for (const auto &[name, param] : args.params)
    addArray(param.data, param.shape);
  for (const ConstArray &param : args.paramsByIndex)
    addArray(param.data, param.shape);
}

static bool sameParamNames(const ForwardArgs &args,
                           const std::vector<std::string> &names) {
  if (args.params.size() != names.size())
    return false;
  size_t i = 0;
  for (const auto &entry : args.params)
    if (entry.first != names[i++])
      return false;
  return true;
}

Expected<std::shared_ptr<const Sizes>>
SizesCache::bind(const Plan &plan, const ForwardArgs &args) {
  thread_local std::vector<int64_t> signature;
  shapeSignature(args, signature);
  std::shared_ptr<const Sizes> hit;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = std::find_if(entries.begin(), entries.end(), [&](auto &e) {
      return e.shapes == signature && sameParamNames(args, e.params);
    });
    if (found != entries.end()) {
      hit = found->sizes;
      std::rotate(entries.begin(), found, found + 1);
    }
  }
  if (hit) {
    // Outside the lock: the check is linear in B.
    if (Status status = checkLengths(args, *hit); !status.ok())
      return status;
    return hit;
  }
  Expected<Sizes> solved = DimBinder(plan, args).bind();
  if (!solved)
    return solved.getStatus();
  Entry entry{signature, {}, std::make_shared<const Sizes>(std::move(*solved))};
  for (const auto &param : args.params)
    entry.params.push_back(param.first);
  std::shared_ptr<const Sizes> sizes = entry.sizes;
  std::lock_guard<std::mutex> lock(mutex);
  if (entries.size() == kEntries)
    entries.pop_back();
  entries.insert(entries.begin(), std::move(entry));
  return sizes;
}

