//===- python/Module.cpp - cellc from Python: compile and run cells -------===//
//
// The extension module `cellc._cellc` (pybind11): compiles a cell through
// the JIT (cached like the C++ API) and runs it forward, backward and one
// step at a time on NumPy arrays, without copying them. The Python package
// (python/cellc/__init__.py) wraps it with located CompileErrors and the
// PyTorch layer (python/cellc/torch.py).
//
// Arrays must be float32 and C-contiguous (lengths: integers), in the
// runtime's layouts: inputs [T, B, LEN] time-major, states [B, LEN], params
// as declared. Anything else is a TypeError or ValueError naming the array.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Runtime.h"
#include "jit/Jit.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

/// A compile error's text (located diagnostics); the package re-raises it
/// as cellc.CompileError with the first location parsed out.
struct CompileFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What the runtime rejected (shapes, lengths, memory).
struct RunFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(const cellrt::Status &status) {
  if (!status.ok())
    throw RunFailure(status.message());
}

std::vector<int64_t> shapeOf(const py::array &array) {
  return std::vector<int64_t>(array.shape(), array.shape() + array.ndim());
}

/// `object` as a float32 C-contiguous array, or a TypeError naming `what`.
py::array floatArray(const py::handle &object, const std::string &what) {
  if (!py::isinstance<py::array>(object))
    throw py::type_error(what + " must be a NumPy float32 array, got " +
                         std::string(py::str(object.get_type().attr(
                             "__name__"))));
  py::array array = py::reinterpret_borrow<py::array>(object);
  if (!array.dtype().is(py::dtype::of<float>()))
    throw py::type_error(what + " must be float32, got " +
                         std::string(py::str(array.dtype())) +
                         " (cellrt computes in float32)");
  if (!(array.flags() & py::array::c_style))
    throw py::value_error(what + " must be C-contiguous (np.ascontiguousarray)");
  return array;
}

cellrt::ConstArray constView(const py::array &array) {
  return {static_cast<const float *>(array.data()), shapeOf(array)};
}

cellrt::MutableArray mutableView(py::array &array) {
  return {static_cast<float *>(array.mutable_data()), shapeOf(array)};
}

py::array_t<float> zeros(const std::vector<int64_t> &shape) {
  py::array_t<float> array(shape);
  std::fill(array.mutable_data(), array.mutable_data() + array.size(), 0.f);
  return array;
}

/// One forward call's arguments, and the arrays they point into (kept
/// alive for backward).
struct Call {
  cellrt::ForwardArgs args;
  std::vector<py::object> keep;
  std::vector<int32_t> lengths;
  std::map<std::string, int64_t> dims;
  int64_t steps = 0, batch = 0;
};

/// A compiled cell. Holds the JIT's object, so the kernels stay loaded.
class PyCell {
public:
  PyCell(cellc::jit::CompiledCell compiled, cellrt::Cell cell)
      : compiled(
            std::make_shared<cellc::jit::CompiledCell>(std::move(compiled))),
        cell(std::make_shared<const cellrt::Cell>(std::move(cell))) {}

  const cellrt::Plan &plan() const { return cell->getPlan(); }

  Call bind(const py::list &inputs, const py::dict &params,
            const py::object &init, const py::object &lengths,
            bool reverse) const;
  py::tuple forward(const py::list &inputs, const py::dict &params,
                    const py::object &init, const py::object &lengths,
                    bool reverse, py::object tape) const;
  py::dict backward(py::object tape, const py::object &outputGradient,
                    const py::object &finalStateGradients) const;
  py::tuple step(const py::list &inputs, const py::list &states,
                 const py::dict &params) const;

  std::shared_ptr<cellc::jit::CompiledCell> compiled;
  /// Shared with the calls running without the GIL (and the tapes they
  /// record), so that setting `precision` replaces it under them safely.
  std::shared_ptr<const cellrt::Cell> cell;
};

/// What forward(tape=...) recorded for backward.
struct PyTape {
  cellrt::Tape tape;
  /// The cell that recorded it, which backward runs, and the JIT object
  /// holding its kernels: the tape keeps both loaded.
  std::shared_ptr<const cellrt::Cell> recordedBy;
  std::shared_ptr<cellc::jit::CompiledCell> recordedCompiled;
  std::optional<Call> call;
  std::vector<py::array> finalStates;
  py::object output;
};

int64_t evaluate(const cellc::DimExpr &length, const Call &call,
                 const std::string &what) {
  std::optional<int64_t> value = length.evaluate(call.dims);
  if (!value)
    throw RunFailure("cannot size " + what + ": " + length.str());
  return *value;
}

Call PyCell::bind(const py::list &inputs, const py::dict &params,
                  const py::object &init, const py::object &lengths,
                  bool reverse) const {
  const cellrt::Plan &p = plan();
  Call call;
  if (py::len(inputs) != p.inputs.size())
    throw py::value_error("cell " + p.cellName + " takes " +
                          std::to_string(p.inputs.size()) + " inputs, got " +
                          std::to_string(py::len(inputs)));
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    py::array array = floatArray(inputs[i], "input '" + p.inputs[i].name + "'");
    call.args.inputs.push_back(constView(array));
    call.keep.push_back(array);
  }
  for (const cellrt::ParamDecl &param : p.params) {
    if (!params.contains(param.name))
      throw py::value_error("missing param '" + param.name + "'");
    py::array array =
        floatArray(params[py::str(param.name)], "param '" + param.name + "'");
    call.args.params[param.name] = constView(array);
    call.keep.push_back(array);
  }
  if (!init.is_none()) {
    py::list states = init;
    if (py::len(states) != p.states.size())
      throw py::value_error("init must have one array per state (" +
                            std::to_string(p.states.size()) + ")");
    for (size_t i = 0; i < p.states.size(); ++i) {
      py::array array =
          floatArray(states[i], "init state '" + p.states[i].name + "'");
      call.args.initialStates.push_back(constView(array));
      call.keep.push_back(array);
    }
  }
  if (!lengths.is_none()) {
    for (const py::handle &length : lengths)
      call.lengths.push_back(length.cast<int32_t>());
  } else if (!call.args.inputs.empty() &&
             call.args.inputs[0].shape.size() == 3) {
    // Every sequence runs all T steps.
    const std::vector<int64_t> &shape = call.args.inputs[0].shape;
    call.lengths.assign(size_t(shape[1]), int32_t(shape[0]));
  } else {
    throw py::value_error("a cell without inputs needs lengths");
  }
  call.args.lengths = call.lengths.data();
  call.args.reverse = reverse;
  cellrt::Expected<cellrt::BoundSizes> sizes =
      cellrt::bindSizes(p, call.args);
  if (!sizes)
    throw RunFailure(sizes.error());
  call.dims = sizes->dims;
  call.steps = sizes->steps;
  call.batch = sizes->batch;
  if (call.lengths.size() != size_t(call.batch))
    throw py::value_error("lengths has " +
                          std::to_string(call.lengths.size()) +
                          " entries for a batch of " +
                          std::to_string(call.batch));
  return call;
}

py::tuple PyCell::forward(const py::list &inputs, const py::dict &params,
                          const py::object &init, const py::object &lengths,
                          bool reverse, py::object tapeObject) const {
  Call call = bind(inputs, params, init, lengths, reverse);
  const cellrt::Plan &p = plan();
  py::array output = zeros(
      {call.steps, call.batch, evaluate(p.outputWidth, call, "the output")});
  call.args.output = mutableView(output);
  std::vector<py::array> finals;
  for (const cellrt::VectorDecl &state : p.states) {
    finals.push_back(
        zeros({call.batch, evaluate(state.length, call, state.name)}));
    call.args.finalStates.push_back(mutableView(finals.back()));
  }
  std::shared_ptr<const cellrt::Cell> running = cell;
  if (tapeObject.is_none()) {
    py::gil_scoped_release release;
    check(running->forward(call.args));
  } else {
    PyTape &tape = tapeObject.cast<PyTape &>();
    {
      py::gil_scoped_release release;
      check(running->forward(call.args, tape.tape));
    }
    tape.recordedBy = running;
    tape.recordedCompiled = compiled;
    tape.finalStates = finals;
    tape.output = output;
    tape.call = std::move(call);
  }
  py::list states;
  for (py::array &state : finals)
    states.append(state);
  return py::make_tuple(output, states);
}

py::dict PyCell::backward(py::object tapeObject,
                          const py::object &outputGradient,
                          const py::object &finalStateGradients) const {
  PyTape &tape = tapeObject.cast<PyTape &>();
  if (!tape.call || !tape.tape.isRecorded())
    throw py::value_error("the tape holds no forward pass: call "
                          "forward(..., tape=tape) first");
  if (tape.recordedCompiled != compiled)
    throw py::value_error("the tape was recorded by another cell: call "
                          "backward on the cell whose forward recorded it");
  // The recording cell's plan sizes the gradients: `precision` may have
  // replaced this cell's since, but never its plan's shapes.
  const cellrt::Plan &p = tape.recordedBy->getPlan();
  Call &call = *tape.call;
  cellrt::BackwardArgs gradients;
  std::vector<py::object> keep;
  if (!outputGradient.is_none()) {
    py::array array = floatArray(outputGradient, "output gradient");
    gradients.outputGradient = constView(array);
    keep.push_back(array);
  }
  if (!finalStateGradients.is_none()) {
    py::list list = finalStateGradients;
    for (size_t i = 0; i < py::len(list); ++i) {
      if (list[i].is_none()) {
        gradients.finalStateGradients.push_back({});
        continue;
      }
      py::array array = floatArray(list[i], "final state gradient");
      gradients.finalStateGradients.push_back(constView(array));
      keep.push_back(array);
    }
  }
  py::list inputGradients, initGradients;
  py::dict paramGradients;
  for (const cellrt::ConstArray &input : call.args.inputs) {
    py::array gradient = zeros(input.shape);
    gradients.inputGradients.push_back(mutableView(gradient));
    inputGradients.append(gradient);
  }
  for (const cellrt::VectorDecl &state : p.states) {
    py::array gradient =
        zeros({call.batch, evaluate(state.length, call, state.name)});
    gradients.initialStateGradients.push_back(mutableView(gradient));
    initGradients.append(gradient);
  }
  for (const auto &[name, param] : call.args.params) {
    py::array gradient = zeros(param.shape);
    gradients.paramGradients[name] = mutableView(gradient);
    paramGradients[py::str(name)] = gradient;
  }
  {
    py::gil_scoped_release release;
    check(tape.recordedBy->backward(call.args, gradients, tape.tape));
  }
  py::dict result;
  result["inputs"] = inputGradients;
  result["init"] = initGradients;
  result["params"] = paramGradients;
  return result;
}

py::tuple PyCell::step(const py::list &inputs, const py::list &states,
                       const py::dict &params) const {
  const cellrt::Plan &p = plan();
  cellrt::StepArgs args;
  std::vector<py::object> keep;
  Call sizing;
  int64_t batch = -1;
  for (size_t i = 0; i < py::len(inputs); ++i) {
    py::array array = floatArray(inputs[i], "step input");
    args.inputs.push_back(constView(array));
    keep.push_back(array);
    batch = array.ndim() > 0 ? array.shape(0) : batch;
  }
  for (size_t i = 0; i < py::len(states); ++i) {
    py::array array = floatArray(states[i], "state");
    args.states.push_back(constView(array));
    keep.push_back(array);
    batch = array.ndim() > 0 ? array.shape(0) : batch;
  }
  for (const cellrt::ParamDecl &param : p.params) {
    if (!params.contains(param.name))
      throw py::value_error("missing param '" + param.name + "'");
    py::array array =
        floatArray(params[py::str(param.name)], "param '" + param.name + "'");
    args.params[param.name] = constView(array);
    keep.push_back(array);
  }
  // A step's sizes are a length-1 sequence's: bind them the same way.
  cellrt::ForwardArgs probe;
  for (const cellrt::ConstArray &input : args.inputs)
    probe.inputs.push_back({input.data, {1, input.shape.at(0),
                                         input.shape.back()}});
  probe.initialStates = args.states;
  probe.params = args.params;
  if (batch < 0)
    throw py::value_error("step needs an input or a state");
  std::vector<int32_t> oneStep(size_t(batch), 1);
  probe.lengths = oneStep.data();
  cellrt::Expected<cellrt::BoundSizes> sizes = cellrt::bindSizes(p, probe);
  if (!sizes)
    throw RunFailure(sizes.error());
  sizing.dims = sizes->dims;
  batch = sizes->batch;
  py::array output =
      zeros({batch, evaluate(p.outputWidth, sizing, "the output")});
  args.output = mutableView(output);
  py::list next;
  std::vector<py::array> nextArrays;
  for (const cellrt::VectorDecl &state : p.states) {
    nextArrays.push_back(
        zeros({batch, evaluate(state.length, sizing, state.name)}));
    args.nextStates.push_back(mutableView(nextArrays.back()));
    next.append(nextArrays.back());
  }
  {
    std::shared_ptr<const cellrt::Cell> running = cell;
    py::gil_scoped_release release;
    check(running->step(args));
  }
  return py::make_tuple(output, next);
}

PyCell compileCell(const std::string &source, bool isPath,
                   const std::string &cellName,
                   const std::map<std::string, int64_t> &dims, bool training,
                   const std::optional<std::string> &cacheDir) {
  cellc::jit::CompileOptions options;
  options.cellName = cellName;
  options.fixedDims = dims;
  options.withBackward = training;
  options.cacheDir = cacheDir;
  cellc::jit::CompileResult compiled = [&] {
    py::gil_scoped_release release;
    return isPath ? cellc::jit::compileFile(source, options)
                  : cellc::jit::compileSource(source, "<string>", options);
  }();
  if (!compiled)
    throw CompileFailure(compiled.error());
  cellrt::Expected<cellrt::Cell> cell = cellrt::Cell::load(compiled->image());
  if (!cell)
    throw CompileFailure(cell.error());
  return PyCell(std::move(*compiled), std::move(*cell));
}

py::list vectors(const std::vector<cellrt::VectorDecl> &decls) {
  py::list list;
  for (const cellrt::VectorDecl &decl : decls)
    list.append(py::make_tuple(decl.name, decl.length.str()));
  return list;
}

} // namespace

PYBIND11_MODULE(_cellc, m) {
  m.doc() = "cellc's JIT and runtime: compile a cell, run it on NumPy arrays";
  py::register_exception<CompileFailure>(m, "CompileFailure");
  py::register_exception<RunFailure>(m, "RunError", PyExc_RuntimeError);

  py::class_<PyTape>(m, "Tape",
                     "What a training forward pass keeps for backward.")
      .def(py::init<>());

  py::class_<PyCell>(m, "Cell", "A compiled cell.")
      .def_property_readonly("name",
                             [](const PyCell &c) { return c.plan().cellName; })
      .def_property_readonly(
          "inputs", [](const PyCell &c) { return vectors(c.plan().inputs); },
          "[(name, length)] in order; lengths are dimension expressions")
      .def_property_readonly(
          "states", [](const PyCell &c) { return vectors(c.plan().states); })
      .def_property_readonly(
          "params",
          [](const PyCell &c) {
            py::list list;
            for (const cellrt::ParamDecl &param : c.plan().params) {
              py::list shape;
              for (const cellc::DimExpr &length : param.shape)
                shape.append(length.str());
              list.append(py::make_tuple(param.name, py::tuple(shape)));
            }
            return list;
          },
          "[(name, shape)] in order")
      .def_property_readonly(
          "output_width",
          [](const PyCell &c) { return c.plan().outputWidth.str(); })
      .def_property_readonly("dims",
                             [](const PyCell &c) { return c.plan().dims; })
      .def_property_readonly(
          "has_backward", [](const PyCell &c) { return c.cell->hasBackward(); })
      .def_property(
          "precision",
          [](const PyCell &c) {
            return std::string(cellrt::precisionName(c.cell->getPrecision()));
          },
          [](PyCell &c, const std::string &name) {
            std::optional<cellrt::Precision> precision =
                cellrt::parsePrecision(name);
            if (!precision)
              throw py::value_error("precision: f32 or bf16, not '" + name +
                                    "'");
            cellrt::Expected<cellrt::Cell> changed =
                c.cell->withPrecision(*precision);
            if (!changed)
              throw RunFailure(changed.error());
            // Calls running without the GIL keep the cell they started on.
            c.cell = std::make_shared<const cellrt::Cell>(std::move(*changed));
          },
          "what the products read: 'f32', or 'bf16' (operands rounded to "
          "bfloat16, f32 sums; gate math and arrays stay f32)")
      .def("forward", &PyCell::forward, py::arg("inputs"), py::arg("params"),
           py::arg("init") = py::none(), py::arg("lengths") = py::none(),
           py::arg("reverse") = false, py::arg("tape") = py::none(),
           "Runs the cell over [T, B, LEN] inputs; returns (output [T, B, "
           "W], [final state [B, LEN]...]). With tape=cellc.Tape() it also "
           "records what backward needs.")
      .def("backward", &PyCell::backward, py::arg("tape"),
           py::arg("output_grad") = py::none(),
           py::arg("final_state_grads") = py::none(),
           "Gradients of a recorded forward pass: {'inputs': [...], "
           "'init': [...], 'params': {name: array}}.")
      .def("step", &PyCell::step, py::arg("inputs"), py::arg("states"),
           py::arg("params"),
           "One step of [B, LEN] inputs and states; returns (output, "
           "[next state...]).");

  m.def("_compile", &compileCell, py::arg("source"), py::arg("is_path"),
        py::arg("cell") = "", py::arg("dims") = std::map<std::string, int64_t>{},
        py::arg("training") = true, py::arg("cache_dir") = py::none());
  m.def("set_threads", &cellrt::setNumThreads, py::arg("threads"),
        "Threads for the fused kernels (the GEMMs follow OpenMP's).");
}
