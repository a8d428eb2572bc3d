//===- python/ops/ScriptCell.cpp - A compiled cell for TorchScript --------===//

#include "ScriptCell.h"

#include <optional>
#include <utility>

namespace cellc::ops {

namespace {

/// The format state() writes: fromState refuses another one rather than
/// read its fields as something else.
const int64_t kStateFormat = 1;

std::vector<std::string> namesOf(const std::vector<cellrt::VectorDecl> &decls) {
  std::vector<std::string> names;
  for (const cellrt::VectorDecl &decl : decls)
    names.push_back(decl.name);
  return names;
}

} // namespace

ScriptCell::ScriptCell(std::string source, std::string cellName, bool training)
    : source(std::move(source)), cellName(std::move(cellName)),
      training(training) {
  jit::CompileOptions options;
  options.cellName = this->cellName;
  options.withBackward = training;
  // Diagnostics name the cell: a scripted module has no file to point at.
  jit::CompileResult result = jit::compileSource(
      this->source, "<cell " + this->cellName + ">", options);
  TORCH_CHECK(result, "cellc: the cell does not compile:\n", result.error());
  cellrt::Expected<cellrt::Cell> loaded = cellrt::Cell::load(result->image());
  TORCH_CHECK(loaded, "cellc: cannot load the compiled cell: ", loaded.error());
  compiled = std::make_shared<const jit::CompiledCell>(std::move(*result));
  cell = std::make_shared<const cellrt::Cell>(std::move(*loaded));
}

std::vector<std::string> ScriptCell::inputNames() const {
  return namesOf(plan().inputs);
}

std::vector<std::string> ScriptCell::stateNames() const {
  return namesOf(plan().states);
}

std::vector<std::string> ScriptCell::paramNames() const {
  std::vector<std::string> names;
  for (const cellrt::ParamDecl &param : plan().params)
    names.push_back(param.name);
  return names;
}

std::string ScriptCell::precision() const {
  return cellrt::precisionName(cell->getPrecision());
}

void ScriptCell::setPrecision(const std::string &name) {
  std::optional<cellrt::Precision> precision = cellrt::parsePrecision(name);
  TORCH_CHECK_VALUE(precision, "cellc: precision is 'f32' or 'bf16', not '",
                    name, "'");
  cellrt::Expected<cellrt::Cell> changed = cell->withPrecision(*precision);
  TORCH_CHECK(changed, "cellc: ", changed.error());
  cell = std::make_shared<const cellrt::Cell>(std::move(*changed));
}

ScriptCell::State ScriptCell::state() const {
  return {kStateFormat, source, cellName, training, precision()};
}

c10::intrusive_ptr<ScriptCell> ScriptCell::fromState(State state) {
  auto &[format, source, cellName, training, precision] = state;
  TORCH_CHECK(format == kStateFormat,
              "cellc: a saved torch.classes.cellc."
              "Cell of format ",
              format, "; this cellc reads format ", kStateFormat);
  auto cell = c10::make_intrusive<ScriptCell>(std::move(source),
                                              std::move(cellName), training);
  cell->setPrecision(precision);
  return cell;
}

} // namespace cellc::ops
