//===- models/common/Cells.cpp - The cells a driver can use --------------===//

#include "models/common/Cells.h"

#include "models/common/Data.h"
#include "models/common/Math.h"

#include "jit/Jit.h"

#include <fstream>
#include <functional>
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

/// A cell through the JIT: `spec` (path.cell[:NAME]) from `source` when it
/// is given (a checkpoint's copy, a built-in's text) or else from the file,
/// with `probes`. Errors say "cannot compile WHAT". The compiled code must
/// outlive the Cell, so it is kept.
static cellrt_image compileCell(const std::string &spec,
                                const std::string &source,
                                const std::vector<std::string> &probes,
                                const std::string &what,
                                std::vector<cellc::jit::CompiledCell> &keep) {
  auto [path, cellName] = splitCellSpec(spec);
  cellc::jit::CompileOptions options;
  options.cellName = cellName;
  options.probes = probes;
  auto compiled = source.empty()
                      ? cellc::jit::compileFile(path, options)
                      : cellc::jit::compileSource(source, path, options);
  if (!compiled)
    throw DataError("cannot compile " + what + ":\n" + compiled.error());
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

static DataError unknownCell(const std::string &name) {
  return DataError("unknown cell '" + name + "' (built in: " +
                   builtinCellList() +
                   "; or a .cell file, path.cell or path.cell:NAME)");
}

/// The cell cached under `key`, or the one `image` makes (keeping any JIT
/// code in its argument), loaded and cached for the life of the process.
static const cellrt::Cell &
cachedCell(const std::vector<std::string> &key, const std::string &name,
           const std::function<cellrt_image(
               std::vector<cellc::jit::CompiledCell> &)> &image) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::unique_ptr<cellrt::Cell>>
      cells;
  static std::vector<cellc::jit::CompiledCell> compiled;
  std::lock_guard<std::mutex> lock(mutex);
  cellrt::Precision precision = productPrecision();
  std::vector<std::string> keyed = key;
  keyed.push_back(cellrt::precisionName(precision));
  auto it = cells.find(keyed);
  if (it != cells.end())
    return *it->second;
  auto loaded = cellrt::Cell::load(image(compiled));
  if (loaded)
    loaded = loaded->withPrecision(precision);
  if (!loaded)
    throw DataError("cell " + name + ": " + loaded.error());
  auto &slot = cells[keyed];
  slot = std::make_unique<cellrt::Cell>(std::move(*loaded));
  return *slot;
}

const cellrt::Cell &loadProbedCell(const std::string &name,
                                   const std::string &source,
                                   const std::vector<std::string> &probes) {
  std::vector<std::string> key = {name, source, "--probe"};
  key.insert(key.end(), probes.begin(), probes.end());
  return cachedCell(key, name, [&](auto &keep) {
    if (const BuiltinCell *builtin = findBuiltin(name)) {
      std::string spec = std::string("cells/") + name + ".cell";
      return compileCell(spec, builtin->source, probes, spec + " with probes",
                         keep);
    }
    if (!isCellFile(name))
      throw unknownCell(name);
    return compileCell(name, source, probes,
                       splitCellSpec(name).first + " with probes", keep);
  });
}

const cellrt::Cell &loadCell(const std::string &name,
                             const std::string &source) {
  return cachedCell({name, source}, name, [&](auto &keep) {
    if (const BuiltinCell *builtin = findBuiltin(name))
      return builtin->image();
    if (!isCellFile(name))
      throw unknownCell(name);
    return compileCell(name, source, {},
                       splitCellSpec(name).first +
                           (source.empty() ? "" : " (the copy kept in the model)"),
                       keep);
  });
}

} // namespace models
