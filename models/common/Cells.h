//===- models/common/Cells.h - The cells a driver can use -------*- C++ -*-===//

#ifndef CELLC_MODELS_COMMON_CELLS_H
#define CELLC_MODELS_COMMON_CELLS_H

#include "cellrt/Runtime.h"

#include <string>
#include <vector>

namespace models {

/// The names of the cells compiled into the binary ahead of time: every
/// cell in cells/.
std::vector<std::string> builtinCells();

/// The `--cell` option's help text: the built-in names and the file form.
std::string cellOptionHelp();

/// A loaded cell by builtin name (atr, gru, lstm, ran, lau, ...) or a .cell file compiled
/// through the JIT (`my.cell` or `my.cell:NAME`, cached on disk). Loaded
/// once and kept for the life of the process. Throws DataError for an
/// unknown name or a file that does not compile (with cellc's located
/// diagnostics).
const cellrt::Cell &loadCell(const std::string &name);

} // namespace models

#endif
