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

/// A loaded cell by builtin name (atr, gru, lstm, ran, lau, ...) or a .cell
/// file compiled through the JIT (`my.cell` or `my.cell:NAME`, cached on
/// disk). With `source` (a checkpoint's copy of the file, see
/// readCellSource) the file itself is not read: a trained model loads after
/// its .cell file moved or changed. Loaded once and kept for the life of the
/// process. Throws DataError for an unknown name or a cell that does not
/// compile (with cellc's located diagnostics).
const cellrt::Cell &loadCell(const std::string &name,
                             const std::string &source = "");

/// The cell `name` (as loadCell takes it) compiled through the JIT with
/// probes (cellc --probe): its kernels also write those values of every
/// step (ForwardArgs::probes, StepArgs::probes). Same params and results as
/// loadCell's; a built-in cell is compiled from the source it was built
/// from. Kept for the life of the process.
const cellrt::Cell &loadProbedCell(const std::string &name,
                                   const std::string &source,
                                   const std::vector<std::string> &probes);

/// The text of the .cell file `--cell name` names, for a checkpoint to keep;
/// empty for a built-in cell. Throws DataError when the file cannot be read.
std::string readCellSource(const std::string &name);

} // namespace models

#endif
