//===- models/nmt/Cells.cpp - The recurrent cells the driver can use -----===//

#include "models/nmt/Cells.h"

#include "models/common/Data.h"

#include "atr.h"
#include "gru.h"
#include "lstm.h"

#include <map>
#include <memory>
#include <mutex>

namespace nmt {

std::vector<std::string> builtinCells() { return {"atr", "gru", "lstm"}; }

const cellrt::Cell &loadCell(const std::string &name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<cellrt::Cell>> cells;
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
  else
    throw DataError("unknown cell '" + name +
                    "' (built in: atr, gru, lstm; .cell files need the JIT, "
                    "not wired in yet)");
  auto loaded = cellrt::Cell::load(image);
  if (!loaded)
    throw DataError("cell " + name + ": " + loaded.error());
  auto &slot = cells[name];
  slot = std::make_unique<cellrt::Cell>(std::move(*loaded));
  return *slot;
}

} // namespace nmt
