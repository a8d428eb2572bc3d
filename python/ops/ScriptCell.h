//===- python/ops/ScriptCell.h - A compiled cell for TorchScript -*- C++
//-*-===//
//
// torch.classes.cellc.Cell: a cell compiled by the JIT and held for the op
// cellc::run (Run.h). It keeps the text it was compiled from, so that a
// scripted module holding one saves with torch.jit.save and compiles it
// again (through the JIT's disk cache) when torch.jit.load reads it.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_PYTHON_OPS_SCRIPTCELL_H
#define CELLC_PYTHON_OPS_SCRIPTCELL_H

#include "cellrt/Runtime.h"
#include "jit/Jit.h"

#include <torch/custom_class.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace cellc::ops {

class ScriptCell : public torch::CustomClassHolder {
public:
  /// What __getstate__ returns: a format number, the source, the cell name,
  /// the training flag and the precision ('f32' or 'bf16').
  using State =
      std::tuple<int64_t, std::string, std::string, bool, std::string>;

  /// Compiles `cellName` of `source` (with its backward when `training`);
  /// a c10::Error with the located diagnostics when it does not compile.
  ScriptCell(std::string source, std::string cellName, bool training);

  /// The runtime cell calls run on now, shared with the tapes it records
  /// (setPrecision replaces it, never the one a tape holds).
  std::shared_ptr<const cellrt::Cell> runtime() const { return cell; }
  /// The JIT object whose kernels `runtime()` calls.
  std::shared_ptr<const jit::CompiledCell> object() const { return compiled; }
  const cellrt::Plan &plan() const { return cell->getPlan(); }

  std::string name() const { return plan().cellName; }
  std::vector<std::string> inputNames() const;
  std::vector<std::string> stateNames() const;
  std::vector<std::string> paramNames() const;
  std::vector<std::string> dims() const { return plan().dims; }
  bool hasBackward() const { return cell->hasBackward(); }
  std::string precision() const;
  /// 'f32' or 'bf16' (Cell::withPrecision); an error on a CPU without bf16.
  void setPrecision(const std::string &precision);

  State state() const;
  static c10::intrusive_ptr<ScriptCell> fromState(State state);

private:
  std::string source, cellName;
  bool training;
  std::shared_ptr<const jit::CompiledCell> compiled;
  std::shared_ptr<const cellrt::Cell> cell;
};

} // namespace cellc::ops

#endif // CELLC_PYTHON_OPS_SCRIPTCELL_H
