//===- models/common/Cells.cpp - The cells a driver can use --------------===//

#include "models/common/Cells.h"

#include "models/common/Data.h"

#include "jit/Jit.h"

#include "atr.h"
#include "gru.h"
#include "lstm.h"

#include <map>
#include <memory>
#include <mutex>

namespace models {

std::vector<std::string> builtinCells() { return {"atr", "gru", "lstm"}; }

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
  cellrt_image image;
  if (name == "atr")
    image = cellc_atr_image();
  else if (name == "gru")
    image = cellc_gru_image();
  else if (name == "lstm")
    image = cellc_lstm_image();
  else if (isCellFile(name))
    image = compileCellFile(name, compiled);
  else
    throw DataError("unknown cell '" + name +
                    "' (built in: atr, gru, lstm; or a .cell file, "
                    "path.cell or path.cell:NAME)");
  auto loaded = cellrt::Cell::load(image);
  if (!loaded)
    throw DataError("cell " + name + ": " + loaded.error());
  auto &slot = cells[name];
  slot = std::make_unique<cellrt::Cell>(std::move(*loaded));
  return *slot;
}

} // namespace models
