//===- python/Module.cpp - cellc from Python: compile and run cells -------===//
//
// The extension module `cellc._cellc` (pybind11): compiles a cell through
// the JIT (cached like the C++ API) and runs it forward, backward and one
// step at a time on NumPy arrays, without copying them, returning its
// probes where asked. A cell keeps the text it was compiled from, so that
// it pickles. The Python package (python/cellc/__init__.py) wraps it with
// located CompileErrors and CompileWarnings and the PyTorch layer
// (python/cellc/torch.py).
//
// Arrays must be float32 and C-contiguous (lengths: integers), in the
// runtime's layouts: inputs [T, B, LEN] time-major, states [B, LEN], params
// as declared and finite. Anything else is a TypeError or ValueError naming
// the array, the param or the argument.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Runtime.h"
#include "jit/Jit.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
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

/// `[3, 4]`, as the runtime's messages write shapes.
std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string typeName(const py::handle &object) {
  return Py_TYPE(object.ptr())->tp_name;
}

/// A ValueError unless `array` has `rank` dimensions: `what` must be
/// `layout`. Said here, before the runtime would blame another array for
/// the sizes this one gave it.
void checkRank(const py::array &array, size_t rank, const std::string &what,
               const std::string &layout) {
  if (size_t(array.ndim()) == rank)
    return;
  throw py::value_error(what + " must be " + layout + ", got a " +
                        std::to_string(array.ndim()) + "-D array of shape " +
                        shapeText(shapeOf(array)));
}

/// A ValueError unless every key of `params` names a param of `plan`: a
/// misspelt param would otherwise be ignored.
void checkParamNames(const cellrt::Plan &plan, const py::dict &params) {
  for (const auto &item : params) {
    std::string name = py::str(item.first);
    if (py::isinstance<py::str>(item.first) && plan.findParam(name))
      continue;
    std::string known;
    for (const cellrt::ParamDecl &param : plan.params)
      known += (known.empty() ? "" : ", ") + param.name;
    throw py::value_error("cell " + plan.cellName + " has no param '" + name +
                          "' (its params: " + known + ")");
  }
}

/// The index of the first NaN or infinity among `count` floats, or -1.
int64_t firstNonFinite(const float *values, int64_t count) {
  // A branch-free test per block vectorises: scanning a forward call's
  // params costs about what reading them once does.
  const int64_t kBlock = 4096;
  for (int64_t start = 0; start < count; start += kBlock) {
    int64_t end = std::min(count, start + kBlock);
    unsigned bad = 0;
    for (int64_t i = start; i < end; ++i)
      bad |= !(std::fabs(values[i]) <= std::numeric_limits<float>::max());
    if (!bad)
      continue;
    for (int64_t i = start; i < end; ++i)
      if (!std::isfinite(values[i]))
        return i;
  }
  return -1;
}

/// A ValueError naming the param and the element where `array` holds a NaN
/// or an infinity: every output and gradient would silently be NaN.
void checkFinite(const py::array &array, const std::string &what) {
  const float *values = static_cast<const float *>(array.data());
  int64_t at = firstNonFinite(values, int64_t(array.size()));
  if (at < 0)
    return;
  std::vector<int64_t> index(size_t(array.ndim()));
  for (int64_t d = array.ndim() - 1, rest = at; d >= 0; --d) {
    index[size_t(d)] = rest % array.shape(d);
    rest /= array.shape(d);
  }
  std::string value = std::isnan(values[at]) ? "NaN"
                      : values[at] > 0       ? "+Inf"
                                             : "-Inf";
  throw py::value_error(what + " holds " + value + " at " + shapeText(index) +
                        ": params must be finite");
}

/// One entry of `lengths`: an integer (what operator.index takes: Python's,
/// NumPy's, an integer tensor's) in [1, steps]. A float is never truncated.
int32_t readLength(const py::handle &item, size_t index, int64_t steps) {
  std::string label = "lengths[" + std::to_string(index) + "]";
  PyObject *number =
      PyIndex_Check(item.ptr()) ? PyNumber_Index(item.ptr()) : nullptr;
  if (!number) {
    PyErr_Clear();
    throw py::type_error(label + " must be an integer, got " + typeName(item) +
                         " " + std::string(py::repr(item)));
  }
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
  std::string text = py::str(number);
  Py_DECREF(number);
  if (overflow || value < 1 || value > steps)
    throw py::value_error(label + " = " + text + " is outside [1, T] = [1, " +
                          std::to_string(steps) + "]");
  return int32_t(value);
}

/// `lengths` as `batch` step counts in [1, steps], from any sequence of
/// integers. A str is never read as its characters, and a sized sequence's
/// count is checked before any entry is read.
std::vector<int32_t> readLengths(const py::object &lengths, int64_t steps,
                                 int64_t batch) {
  auto notASequence = [&] {
    return py::type_error("lengths must be a sequence of B integers, got " +
                          typeName(lengths));
  };
  if (py::isinstance<py::str>(lengths) || py::isinstance<py::bytes>(lengths))
    throw notASequence();
  auto countError = [&](size_t count) {
    return py::value_error("lengths has " + std::to_string(count) +
                           " entries for a batch of " + std::to_string(batch));
  };
  Py_ssize_t size = PyObject_Size(lengths.ptr());
  if (size < 0)
    PyErr_Clear(); // an iterator: counted as it is read
  else if (size != batch)
    throw countError(size_t(size));
  py::iterator items;
  try {
    items = py::iter(lengths);
  } catch (py::error_already_set &) {
    throw notASequence();
  }
  std::vector<int32_t> values;
  for (py::handle item : items)
    values.push_back(readLength(item, values.size(), steps));
  if (values.size() != size_t(batch))
    throw countError(values.size());
  return values;
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

/// What a cell was compiled from: enough to compile it again (a pickled
/// cell), through the JIT's cache.
struct CellSource {
  /// The cell file's text, read when the cell was compiled.
  std::string text;
  /// What diagnostics name: the file's path, or "<string>".
  std::string displayName;
  /// As the caller asked (empty: the file's only cell), so that compiling
  /// again hits the cache entry of the first compile.
  std::string cellName;
  std::map<std::string, int64_t> fixedDims;
  bool training = true;
  std::vector<std::string> probes;
};

/// A compiled cell. Holds the JIT's object, so the kernels stay loaded.
class PyCell {
public:
  PyCell(CellSource source, cellc::jit::CompiledCell compiled,
         cellrt::Cell cell)
      : source(std::move(source)),
        compiled(
            std::make_shared<cellc::jit::CompiledCell>(std::move(compiled))),
        cell(std::make_shared<const cellrt::Cell>(std::move(cell))) {}

  const cellrt::Plan &plan() const { return cell->getPlan(); }

  Call bind(const py::list &inputs, const py::dict &params,
            const py::object &init, const py::object &lengths,
            bool reverse) const;
  py::tuple forward(const py::list &inputs, const py::dict &params,
                    const py::object &init, const py::object &lengths,
                    bool reverse, py::object tape, bool returnProbes) const;
  py::dict backward(py::object tape, const py::object &outputGradient,
                    const py::object &finalStateGradients) const;
  py::tuple step(const py::list &inputs, const py::list &states,
                 const py::dict &params, bool returnProbes) const;

  /// Zeroed [leading..., LEN] arrays for every probe, written through
  /// `views`, and the dict of them forward and step return; a ValueError
  /// when the cell was compiled without probes.
  py::dict probeArrays(const std::vector<int64_t> &leading, const Call &sizing,
                       std::vector<cellrt::MutableArray> &views) const;

  CellSource source;
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
  if (p.inputs.empty())
    throw py::value_error("cell " + p.cellName +
                          " has no inputs: forward runs a cell over input "
                          "sequences");
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const cellrt::VectorDecl &input = p.inputs[i];
    std::string what = "input '" + input.name + "'";
    py::array array = floatArray(inputs[i], what);
    checkRank(array, 3, what,
              "[T, B, " + input.length.str() + "] (time-major)");
    if (array.shape(2) == 0)
      throw py::value_error(what + " has width 0: its length " +
                            input.length.str() + " must be at least 1");
    call.args.inputs.push_back(constView(array));
    call.keep.push_back(array);
  }
  checkParamNames(p, params);
  for (const cellrt::ParamDecl &param : p.params) {
    if (!params.contains(param.name))
      throw py::value_error("missing param '" + param.name + "'");
    std::string what = "param '" + param.name + "'";
    py::array array = floatArray(params[py::str(param.name)], what);
    checkFinite(array, what);
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
  // The first input gives T and B; the runtime checks the rest against it.
  const std::vector<int64_t> &first = call.args.inputs[0].shape;
  if (lengths.is_none())
    call.lengths.assign(size_t(first[1]), int32_t(first[0]));
  else
    call.lengths = readLengths(lengths, first[0], first[1]);
  call.args.lengths = call.lengths.data();
  call.args.reverse = reverse;
  cellrt::Expected<cellrt::BoundSizes> sizes = cellrt::bindSizes(p, call.args);
  if (!sizes)
    throw RunFailure(sizes.error());
  call.dims = sizes->dims;
  call.steps = sizes->steps;
  call.batch = sizes->batch;
  return call;
}

py::dict PyCell::probeArrays(const std::vector<int64_t> &leading,
                             const Call &sizing,
                             std::vector<cellrt::MutableArray> &views) const {
  const cellrt::Plan &p = plan();
  if (p.probes.empty())
    throw py::value_error("cell " + p.cellName +
                          " has no probes: compile it with probes=[names]");
  py::dict arrays;
  for (const cellrt::VectorDecl &probe : p.probes) {
    std::vector<int64_t> shape = leading;
    shape.push_back(evaluate(probe.length, sizing, "probe " + probe.name));
    py::array array = zeros(shape);
    views.push_back(mutableView(array));
    arrays[py::str(probe.name)] = array;
  }
  return arrays;
}

py::tuple PyCell::forward(const py::list &inputs, const py::dict &params,
                          const py::object &init, const py::object &lengths,
                          bool reverse, py::object tapeObject,
                          bool returnProbes) const {
  Call call = bind(inputs, params, init, lengths, reverse);
  const cellrt::Plan &p = plan();
  py::array output = zeros(
      {call.steps, call.batch, evaluate(p.outputWidth, call, "the output")});
  call.args.output = mutableView(output);
  py::dict probes;
  if (returnProbes) {
    probes = probeArrays({call.steps, call.batch}, call, call.args.probes);
    // A tape keeps the call, whose arguments point at them.
    for (const auto &item : probes)
      call.keep.push_back(py::reinterpret_borrow<py::object>(item.second));
  }
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
  if (returnProbes)
    return py::make_tuple(output, states, probes);
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
                       const py::dict &params, bool returnProbes) const {
  const cellrt::Plan &p = plan();
  cellrt::StepArgs args;
  std::vector<py::object> keep;
  Call sizing;
  int64_t batch = -1;
  if (py::len(inputs) != p.inputs.size())
    throw py::value_error("cell " + p.cellName + " takes " +
                          std::to_string(p.inputs.size()) + " inputs, got " +
                          std::to_string(py::len(inputs)));
  if (py::len(states) > p.states.size())
    throw py::value_error("cell " + p.cellName + " has " +
                          std::to_string(p.states.size()) + " states, got " +
                          std::to_string(py::len(states)));
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    std::string what = "step input '" + p.inputs[i].name + "'";
    py::array array = floatArray(inputs[i], what);
    checkRank(array, 2, what, "[B, " + p.inputs[i].length.str() + "]");
    args.inputs.push_back(constView(array));
    keep.push_back(array);
    batch = array.shape(0);
  }
  for (size_t i = 0; i < py::len(states); ++i) {
    std::string what = "state '" + p.states[i].name + "'";
    py::array array = floatArray(states[i], what);
    checkRank(array, 2, what, "[B, " + p.states[i].length.str() + "]");
    args.states.push_back(constView(array));
    keep.push_back(array);
    batch = array.shape(0);
  }
  // Params are not checked for NaN here: a decoding step's own work can be
  // smaller than one scan of the weights.
  checkParamNames(p, params);
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
  py::dict probes;
  if (returnProbes)
    probes = probeArrays({batch}, sizing, args.probes);
  {
    std::shared_ptr<const cellrt::Cell> running = cell;
    py::gil_scoped_release release;
    check(running->step(args));
  }
  if (returnProbes)
    return py::make_tuple(output, next, probes);
  return py::make_tuple(output, next);
}

/// The text of the cell file at `path`, or a CompileFailure saying why not
/// (as the JIT's compileFile says it).
std::string readCellFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  if (!(file && text << file.rdbuf()))
    throw CompileFailure(path +
                         ": error: cannot read: " + std::strerror(errno));
  return text.str();
}

/// Compiles `source` through the JIT (its cache in `cacheDir`; std::nullopt:
/// the default), as a PyCell that keeps `source`, and the warnings the
/// compile reported, located as cellc prints them.
std::pair<PyCell, std::string>
compileCellSource(CellSource source,
                  const std::optional<std::string> &cacheDir) {
  cellc::jit::CompileOptions options;
  options.cellName = source.cellName;
  options.fixedDims = source.fixedDims;
  options.withBackward = source.training;
  options.probes = source.probes;
  options.cacheDir = cacheDir;
  cellc::jit::CompileResult compiled = [&] {
    py::gil_scoped_release release;
    return cellc::jit::compileSource(source.text, source.displayName, options);
  }();
  if (!compiled)
    throw CompileFailure(compiled.error());
  cellrt::Expected<cellrt::Cell> cell = cellrt::Cell::load(compiled->image());
  if (!cell)
    throw CompileFailure(cell.error());
  std::string warnings = compiled->warnings();
  return {PyCell(std::move(source), std::move(*compiled), std::move(*cell)),
          std::move(warnings)};
}

/// `_compile`: a cell from a file's path or text; returns (cell, warnings).
py::tuple compileCell(const std::string &pathOrText, bool isPath,
                      const std::string &cellName,
                      const std::map<std::string, int64_t> &dims, bool training,
                      const std::optional<std::string> &cacheDir,
                      const std::vector<std::string> &probes) {
  CellSource source;
  source.text = isPath ? readCellFile(pathOrText) : pathOrText;
  source.displayName = isPath ? pathOrText : "<string>";
  source.cellName = cellName;
  source.fixedDims = dims;
  source.training = training;
  source.probes = probes;
  auto [cell, warnings] = compileCellSource(std::move(source), cacheDir);
  return py::make_tuple(std::move(cell), warnings);
}

/// Sets `cell`'s precision by name ('f32' or 'bf16').
void setPrecision(PyCell &cell, const std::string &name) {
  std::optional<cellrt::Precision> precision = cellrt::parsePrecision(name);
  if (!precision)
    throw py::value_error("precision: f32 or bf16, not '" + name + "'");
  cellrt::Expected<cellrt::Cell> changed = cell.cell->withPrecision(*precision);
  if (!changed)
    throw RunFailure(changed.error());
  // Calls running without the GIL keep the cell they started on.
  cell.cell = std::make_shared<const cellrt::Cell>(std::move(*changed));
}

std::string precisionOf(const PyCell &cell) {
  return cellrt::precisionName(cell.cell->getPrecision());
}

// A pickled cell is what it was compiled from and its precision; unpickling
// compiles it again, through the JIT's cache in its default place (a
// pickle may travel to another machine, where the cache folder it was made
// with means nothing).
const int kPickleFormat = 1;

py::tuple pickledCell(const PyCell &cell) {
  const CellSource &source = cell.source;
  return py::make_tuple(kPickleFormat, source.text, source.displayName,
                        source.cellName, source.fixedDims, source.training,
                        source.probes, precisionOf(cell));
}

PyCell unpickledCell(const py::tuple &state) {
  if (state.size() != 8 || state[0].cast<int>() != kPickleFormat)
    throw py::value_error("not a pickled cellc.Cell of this version of cellc");
  CellSource source;
  source.text = state[1].cast<std::string>();
  source.displayName = state[2].cast<std::string>();
  source.cellName = state[3].cast<std::string>();
  source.fixedDims = state[4].cast<std::map<std::string, int64_t>>();
  source.training = state[5].cast<bool>();
  source.probes = state[6].cast<std::vector<std::string>>();
  PyCell cell = compileCellSource(std::move(source), std::nullopt).first;
  setPrecision(cell, state[7].cast<std::string>());
  return cell;
}

py::list vectors(const std::vector<cellrt::VectorDecl> &decls) {
  py::list list;
  for (const cellrt::VectorDecl &decl : decls)
    list.append(py::make_tuple(decl.name, decl.length.str()));
  return list;
}

/// Draws the params in `params` (float32 C-contiguous arrays, written in
/// place) from `seed` by Cell::initParams: the values of the C++ and C APIs
/// and of `cellc run --init-seed`.
void initParams(const PyCell &c, const py::dict &params, uint64_t seed,
                const std::string &fallback) {
  std::optional<cellrt::InitScheme> scheme =
      cellrt::InitScheme::parseWritten(fallback);
  if (!scheme)
    throw py::value_error("fallback must be a scheme such as 'fan_in', "
                          "'uniform(0.1)' or 'none', not '" +
                          fallback + "'");
  checkParamNames(c.plan(), params);
  std::map<std::string, cellrt::MutableArray> arrays;
  std::vector<py::array> keep;
  for (const auto &item : params) {
    std::string name = py::str(item.first);
    std::string what = "param '" + name + "'";
    py::array array = floatArray(item.second, what);
    if (!array.writeable())
      throw py::value_error(what + " is read-only");
    arrays[name] = mutableView(array);
    keep.push_back(array);
  }
  check(c.cell->initParams(arrays, seed, *scheme));
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
      .def_property("precision", &precisionOf, &setPrecision,
                    "what the products read: 'f32', or 'bf16' (operands "
                    "rounded to bfloat16, f32 sums; gate math and arrays "
                    "stay f32)")
      .def_property_readonly(
          "probes", [](const PyCell &c) { return vectors(c.plan().probes); },
          "[(name, length)]: the values forward and step return with "
          "return_probes=True (compile(..., probes=[names]))")
      .def_property_readonly(
          "source", [](const PyCell &c) { return c.source.text; },
          "the text the cell was compiled from (a file's, as it was read)")
      .def(py::pickle(&pickledCell, &unpickledCell))
      // Copies share the compiled cell, which is immutable; a copy's
      // precision is its own.
      .def("__copy__", [](const PyCell &c) { return PyCell(c); })
      .def(
          "__deepcopy__",
          [](const PyCell &c, const py::dict &) { return PyCell(c); },
          py::arg("memo"))
      .def("forward", &PyCell::forward, py::arg("inputs"), py::arg("params"),
           py::arg("init") = py::none(), py::arg("lengths") = py::none(),
           py::arg("reverse") = false, py::arg("tape") = py::none(),
           py::arg("return_probes") = false,
           "Runs the cell over [T, B, LEN] inputs; returns (output [T, B, "
           "W], [final state [B, LEN]...]). With tape=cellc.Tape() it also "
           "records what backward needs. With return_probes=True it "
           "returns a third element, {probe name: [T, B, LEN] array} (zeros "
           "at padded steps) for a cell compiled with probes.")
      .def("backward", &PyCell::backward, py::arg("tape"),
           py::arg("output_grad") = py::none(),
           py::arg("final_state_grads") = py::none(),
           "Gradients of a recorded forward pass: {'inputs': [...], "
           "'init': [...], 'params': {name: array}}.")
      .def("step", &PyCell::step, py::arg("inputs"), py::arg("states"),
           py::arg("params"), py::arg("return_probes") = false,
           "One step of [B, LEN] inputs and states; returns (output, "
           "[next state...]), and with return_probes=True a third element, "
           "{probe name: [B, LEN] array}.")
      .def_property_readonly(
          "param_inits",
          [](const PyCell &c) {
            py::dict inits;
            for (const cellrt::ParamDecl &param : c.plan().params)
              inits[py::str(param.name)] = param.init.str();
            return inits;
          },
          "{name: initialiser} as the plan writes it ('uniform 0.05', "
          "'orthogonal', 'constant 1'; 'none' where the cell declares none)")
      .def("init_params", &initParams, py::arg("params"), py::arg("seed"),
           py::arg("fallback") = "none",
           "Draws the params in {name: float32 array} in place from seed "
           "(0 to 2**64-1): each by its cell's initialiser, one without by "
           "fallback ('fan_in', 'fan_out', 'orthogonal', 'uniform(A)', "
           "'normal(S)', 'constant(C)', or 'none': left as it is). The "
           "same seed gives the same values as the C++ and C APIs.");

  // What the JIT's cache keys name as the compiler build (tests).
  m.def("_compiler_identity", &cellc::jit::compilerIdentity);
  m.def("_compile", &compileCell, py::arg("source"), py::arg("is_path"),
        py::arg("cell") = "", py::arg("dims") = std::map<std::string, int64_t>{},
        py::arg("training") = true, py::arg("cache_dir") = py::none(),
        py::arg("probes") = std::vector<std::string>{});
  // The project's version (CMakeLists.txt's project()), as built.
  m.attr("__version__") = CELLC_VERSION;
  m.def(
      "set_threads",
      [](int64_t threads) {
        if (threads < 1 || threads > std::numeric_limits<int>::max())
          throw py::value_error("set_threads: threads must be at least 1, "
                                "got " +
                                std::to_string(threads));
        cellrt::setNumThreads(int(threads));
      },
      py::arg("threads"),
      "Threads for the fused kernels (the GEMMs follow OpenMP's).");
}
