//===- python/ops/Register.cpp - cellc's TorchScript class and op ---------===//
//
// The library `cellc/_ops*.so` (torch.ops.load_library loads it; cellc's
// python/cellc/_script.py does on import) registers
//
//   torch.classes.cellc.Cell(source: str, cell: str, training: bool)
//       .name() .input_names() .state_names() .param_names() .dims()
//       .has_backward() .precision() .set_precision(str)
//   torch.ops.cellc.run(cell, inputs, init, params, lengths, reverse)
//
// A Cell pickles as (format, source, cell name, training, precision), so a
// scripted module holding one saves with torch.jit.save and is compiled
// again when torch.jit.load reads it in another process.
//
//===----------------------------------------------------------------------===//

#include "Run.h"
#include "ScriptCell.h"

#include <torch/library.h>

using cellc::ops::CallRecord;
using cellc::ops::ScriptCell;

TORCH_LIBRARY(cellc, m) {
  m.class_<ScriptCell>("Cell")
      .def(torch::init<std::string, std::string, bool>())
      .def("name", &ScriptCell::name)
      .def("input_names", &ScriptCell::inputNames)
      .def("state_names", &ScriptCell::stateNames)
      .def("param_names", &ScriptCell::paramNames)
      .def("dims", &ScriptCell::dims)
      .def("has_backward", &ScriptCell::hasBackward)
      .def("precision", &ScriptCell::precision)
      .def("set_precision", &ScriptCell::setPrecision)
      .def_pickle(
          [](const c10::intrusive_ptr<ScriptCell> &cell) {
            return cell->state();
          },
          [](ScriptCell::State state) {
            return ScriptCell::fromState(std::move(state));
          });
  // Only for autograd's saved_data: never built or read by a script.
  m.class_<CallRecord>("CallRecord");
  m.def("run(__torch__.torch.classes.cellc.Cell cell, Tensor[] inputs, "
        "Tensor[] init, Tensor[] params, Tensor lengths, bool reverse) "
        "-> Tensor[]",
        &cellc::ops::run);
}
