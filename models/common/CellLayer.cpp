//===- models/common/CellLayer.cpp - A compiled cell as a layer ----------===//

#include "models/common/CellLayer.h"

#include "models/common/Data.h"

namespace models {

void check(const cellrt::Status &status, const char *what) {
  // An exception, not an abort: the driver reports it and a library user
  // (or a test) can recover.
  if (!status.ok())
    throw CellRuntimeError(std::string(what) + ": " + status.message());
}

static void bindSymbol(const cellrt::DimExpr &expr, int64_t value,
                       std::map<std::string, int64_t> &dims,
                       const std::string &what) {
  const auto &terms = expr.getTerms();
  if (terms.size() == 1 && terms[0].second == 1 && !terms[0].first.empty()) {
    auto [it, inserted] = dims.emplace(terms[0].first, value);
    if (!inserted && it->second != value)
      throw DataError(what + ": dim " + terms[0].first + " is bound to both " +
                      std::to_string(it->second) + " and " +
                      std::to_string(value));
    return;
  }
  if (auto known = expr.evaluate(dims); known && *known == value)
    return;
  throw DataError(what + ": cannot bind the width " + expr.str() + " to " +
                  std::to_string(value));
}

CellLayer::CellLayer(const cellrt::Cell &cell, const std::string &prefix,
                     int64_t inputSize, int64_t stateSize,
                     ParamStore &store)
    : impl(&cell), input(inputSize) {
  const cellrt::Plan &plan = cell.getPlan();
  std::string what = "cell " + plan.cellName + " (" + prefix + ")";
  if (plan.inputs.size() != 1)
    throw DataError(what + ": a model layer needs a cell with exactly one "
                           "input, this one has " +
                    std::to_string(plan.inputs.size()));
  std::map<std::string, int64_t> dims;
  bindSymbol(plan.inputs[0].length, inputSize, dims, what);
  for (const auto &state : plan.states)
    bindSymbol(state.length, stateSize, dims, what);
  for (const auto &state : plan.states)
    states.push_back(*state.length.evaluate(dims));
  auto out = plan.outputWidth.evaluate(dims);
  if (!out)
    throw DataError(what + ": cannot evaluate the output width");
  output = *out;
  for (const auto &decl : plan.params) {
    std::vector<int64_t> shape;
    for (const auto &dim : decl.shape) {
      auto value = dim.evaluate(dims);
      if (!value)
        throw DataError(what + ": param " + decl.name + " has unbound dim " +
                        dim.str());
      shape.push_back(*value);
    }
    params.push_back(&store.add(prefix + "." + decl.name, std::move(shape)));
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

} // namespace models
