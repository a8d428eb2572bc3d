//===- models/common/Cells.cpp - The cells a driver can use --------------===//

#include "models/common/Cells.h"

#include "models/common/Data.h"

#include "jit/Jit.h"

#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

namespace models {

namespace {
struct BuiltinCell {
  const char *name;
  cellrt_image (*image)();
  /// The cells/NAME.cell it was compiled from.
  const char *source;
};
// kBuiltinCells: every cell in cells/, compiled ahead of time.
#include "BuiltinCells.inc"
} // namespace

std::vector<std::string> builtinCells() {
  std::vector<std::string> names;
  for (const BuiltinCell &cell : kBuiltinCells)
    names.push_back(cell.name);
  return names;
}

static std::string builtinCellList() {
  std::string list;
  for (const BuiltinCell &cell : kBuiltinCells)
    list += (list.empty() ? "" : ", ") + std::string(cell.name);
  return list;
}

std::string cellOptionHelp() {
  return "a cell of cells/ (" + builtinCellList() +
         ") or a .cell file (path.cell or path.cell:NAME)";
}

/// `path.cell` or `path.cell:NAME` as (path, NAME); NAME empty: the file's
/// only cell.
static std::pair<std::string, std::string>
splitCellSpec(const std::string &spec) {
  size_t colon = spec.rfind(':');
  if (colon != std::string::npos && colon >= 5 &&
      spec.compare(colon - 5, 5, ".cell") == 0)
    return {spec.substr(0, colon), spec.substr(colon + 1)};
  return {spec, ""};
}

/// A .cell file through the JIT, from `source` when it is given (a
/// checkpoint's copy) or else from the file. The compiled code must outlive
/// the Cell, so both are kept.
static cellrt_image compileCellFile(const std::string &spec,
                                    const std::string &source,
                                    std::vector<cellc::jit::CompiledCell> &keep) {
  auto [path, cellName] = splitCellSpec(spec);
  cellc::jit::CompileOptions options;
  options.cellName = cellName;
  auto compiled = source.empty()
                      ? cellc::jit::compileFile(path, options)
                      : cellc::jit::compileSource(source, path, options);
  if (!compiled)
    throw DataError("cannot compile " + path +
                    (source.empty() ? "" : " (the copy kept in the model)") +
                    ":\n" + compiled.error());
  keep.push_back(std::move(*compiled));
  return keep.back().image();
}

static bool isCellFile(const std::string &name) {
  return name.find(".cell") != std::string::npos;
}

static const BuiltinCell *findBuiltin(const std::string &name) {
  for (const BuiltinCell &cell : kBuiltinCells)
    if (name == cell.name)
      return &cell;
  return nullptr;
}

std::string readCellSource(const std::string &name) {
  if (findBuiltin(name) || !isCellFile(name))
    return "";
  std::string path = splitCellSpec(name).first;
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  if (!file)
    throw DataError("cannot read " + path);
  return text.str();
}

const cellrt::Cell &loadProbedCell(const std::string &name,
                                   const std::string &source,
                                   const std::vector<std::string> &probes) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::unique_ptr<cellrt::Cell>>
      cells;
  static std::vector<cellc::jit::CompiledCell> compiled;
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<std::string> key = {name, source};
  key.insert(key.end(), probes.begin(), probes.end());
  auto it = cells.find(key);
  if (it != cells.end())
    return *it->second;
  const BuiltinCell *builtin = findBuiltin(name);
  std::string text = builtin ? builtin->source
                     : source.empty() ? readCellSource(name)
                                      : source;
  if (text.empty())
    throw DataError("unknown cell '" + name + "' (built in: " +
                    builtinCellList() +
                    "; or a .cell file, path.cell or path.cell:NAME)");
  std::string spec = builtin ? std::string("cells/") + name + ".cell" : name;
  cellc::jit::CompileOptions options;
  options.cellName = splitCellSpec(spec).second;
  options.probes = probes;
  auto result = cellc::jit::compileSource(text, splitCellSpec(spec).first,
                                          options);
  if (!result)
    throw DataError("cannot compile " + spec + " with probes:\n" +
                    result.error());
  compiled.push_back(std::move(*result));
  auto loaded = cellrt::Cell::load(compiled.back().image());
  if (!loaded)
    throw DataError("cell " + name + ": " + loaded.error());
  auto &slot = cells[key];
  slot = std::make_unique<cellrt::Cell>(std::move(*loaded));
  return *slot;
}

const cellrt::Cell &loadCell(const std::string &name,
                             const std::string &source) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>,
                  std::unique_ptr<cellrt::Cell>>
      cells;
  static std::vector<cellc::jit::CompiledCell> compiled;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cells.find({name, source});
  if (it != cells.end())
    return *it->second;
  cellrt_image image;
  if (const BuiltinCell *builtin = findBuiltin(name))
    image = builtin->image();
  else if (isCellFile(name))
    image = compileCellFile(name, source, compiled);
  else
    throw DataError("unknown cell '" + name + "' (built in: " +
                    builtinCellList() +
                    "; or a .cell file, path.cell or path.cell:NAME)");
  auto loaded = cellrt::Cell::load(image);
  if (!loaded)
    throw DataError("cell " + name + ": " + loaded.error());
  auto &slot = cells[{name, source}];
  slot = std::make_unique<cellrt::Cell>(std::move(*loaded));
  return *slot;
}

} // namespace models
