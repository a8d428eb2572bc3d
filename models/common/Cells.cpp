//===- models/common/Cells.cpp - The cells a driver can use --------------===//

#include "models/common/Cells.h"

#include "models/common/Data.h"

#include "jit/Jit.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

namespace models {

namespace {
struct BuiltinCell {
  const char *name;
  cellrt_image (*image)();
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

/// A .cell file through the JIT: `path.cell` (its only cell) or
/// `path.cell:NAME`. The compiled code must outlive the Cell, so both are
/// kept.
static cellrt_image compileCellFile(const std::string &spec,
                                    std::vector<cellc::jit::CompiledCell> &keep) {
  std::string path = spec, cellName;
  size_t colon = spec.rfind(':');
  if (colon != std::string::npos && spec.compare(colon - 5, 5, ".cell") == 0) {
    path = spec.substr(0, colon);
    cellName = spec.substr(colon + 1);
  }
  cellc::jit::CompileOptions options;
  options.cellName = cellName;
  auto compiled = cellc::jit::compileFile(path, options);
  if (!compiled)
    throw DataError("cannot compile " + path + ":\n" + compiled.error());
  keep.push_back(std::move(*compiled));
  return keep.back().image();
}

static bool isCellFile(const std::string &name) {
  return name.find(".cell") != std::string::npos;
}

const cellrt::Cell &loadCell(const std::string &name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<cellrt::Cell>> cells;
  static std::vector<cellc::jit::CompiledCell> compiled;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cells.find(name);
  if (it != cells.end())
    return *it->second;
  const BuiltinCell *builtin = std::find_if(
      std::begin(kBuiltinCells), std::end(kBuiltinCells),
      [&](const BuiltinCell &cell) { return name == cell.name; });
  cellrt_image image;
  if (builtin != std::end(kBuiltinCells))
    image = builtin->image();
  else if (isCellFile(name))
    image = compileCellFile(name, compiled);
  else
    throw DataError("unknown cell '" + name + "' (built in: " +
                    builtinCellList() +
                    "; or a .cell file, path.cell or path.cell:NAME)");
  auto loaded = cellrt::Cell::load(image);
  if (!loaded)
    throw DataError("cell " + name + ": " + loaded.error());
  auto &slot = cells[name];
  slot = std::make_unique<cellrt::Cell>(std::move(*loaded));
  return *slot;
}

} // namespace models
