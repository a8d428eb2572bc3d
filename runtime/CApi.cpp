//===- CApi.cpp - The C API over cellrt::Cell -----------------------------===//
//
// C callers pass the dimension values instead of shapes; the shapes follow
// from the plan, then everything goes through the C++ API.
//
//===----------------------------------------------------------------------===//

#include "cellrt/cellrt.h"
#include "cellrt/Runtime.h"

#include <map>
#include <string>
#include <vector>

using namespace cellrt;

struct cellrt_cell {
  Cell cell;
  /// cellrt_cell_param_init's strings, one per param.
  std::vector<std::string> paramInits;
};
struct cellrt_tape {
  Tape tape;
};

namespace {

thread_local std::string lastError;

int fail(const std::string &message) {
  lastError = message;
  return 1;
}

int report(const Status &status) {
  if (status.ok())
    return 0;
  return fail(status.message());
}

/// The C++ arguments for a C run: shapes from the plan and the dims.
struct Translation {
  std::map<std::string, int64_t> dims;
  std::vector<int32_t> fullLengths;
  ForwardArgs args;

  int64_t eval(const DimExpr &expr) const { return *expr.evaluate(dims); }

  std::vector<int64_t> paramShape(const ParamDecl &param) const {
    std::vector<int64_t> shape;
    for (const DimExpr &dim : param.shape)
      shape.push_back(eval(dim));
    return shape;
  }

  int translate(const Plan &plan, const cellrt_run_args &c, int64_t steps) {
    for (size_t i = 0; i < plan.dims.size(); ++i)
      dims[plan.dims[i]] = c.dims[i];
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      args.inputs.push_back(
          {c.inputs[i], {steps, c.batch, eval(plan.inputs[i].length)}});
    if (!c.lengths)
      fullLengths.assign(c.batch, static_cast<int32_t>(steps));
    args.lengths = c.lengths ? c.lengths : fullLengths.data();
    for (size_t i = 0; i < plan.states.size(); ++i) {
      int64_t width = eval(plan.states[i].length);
      args.initialStates.push_back(
          {c.initial_states ? c.initial_states[i] : nullptr,
           {c.batch, width}});
      args.finalStates.push_back(
          {c.final_states ? c.final_states[i] : nullptr, {c.batch, width}});
    }
    for (int64_t i = 0; i < c.num_params; ++i) {
      const ParamDecl *param = plan.findParam(c.params[i].name);
      if (!param)
        return fail("cell '" + plan.cellName + "' has no param '" +
                    c.params[i].name + "'");
      args.params[param->name] = {c.params[i].data, paramShape(*param)};
    }
    args.reverse = c.reverse != 0;
    args.output = {c.output, {steps, c.batch, eval(plan.outputWidth)}};
    if (c.probes)
      for (size_t i = 0; i < plan.probes.size(); ++i)
        args.probes.push_back(
            {c.probes[i], {steps, c.batch, eval(plan.probes[i].length)}});
    return 0;
  }
};

} // namespace

namespace {

/// `length` for the dims' values in plan order; -1 when it cannot be had.
int64_t evaluateFor(const cellrt_cell *cell, const cellc::DimExpr &length,
                    const int64_t *dims) {
  const std::vector<std::string> &names = cell->cell.getPlan().dims;
  std::map<std::string, int64_t> values;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!dims)
      return -1;
    values[names[i]] = dims[i];
  }
  return length.evaluate(values).value_or(-1);
}

template <typename Decls>
bool inRange(const Decls &decls, int64_t index) {
  return index >= 0 && index < static_cast<int64_t>(decls.size());
}

/// The name of declaration `index`, or null.
template <typename Decls>
const char *nameAt(const Decls &decls, int64_t index) {
  return inRange(decls, index) ? decls[index].name.c_str() : nullptr;
}

/// The length of vector declaration `index` for `dims`, or -1.
int64_t lengthAt(const cellrt_cell *cell,
                 const std::vector<cellrt::VectorDecl> &decls, int64_t index,
                 const int64_t *dims) {
  return inRange(decls, index) ? evaluateFor(cell, decls[index].length, dims)
                               : -1;
}

} // namespace

extern "C" {

cellrt_cell *cellrt_cell_load(cellrt_image image) {
  Expected<Cell> cell = Cell::load(image);
  if (!cell) {
    fail(cell.error());
    return nullptr;
  }
  std::vector<std::string> inits;
  for (const ParamDecl &param : cell->getPlan().params)
    inits.push_back(param.init.str());
  return new cellrt_cell{std::move(*cell), std::move(inits)};
}

void cellrt_cell_free(cellrt_cell *cell) { delete cell; }

const char *cellrt_cell_precision(const cellrt_cell *cell) {
  return precisionName(cell->cell.getPrecision());
}

int cellrt_cell_set_precision(cellrt_cell *cell, const char *precision) {
  std::optional<Precision> parsed =
      parsePrecision(precision ? precision : "(null)");
  if (!parsed)
    return fail(std::string("cellrt_cell_set_precision: f32 or bf16, not ") +
                (precision ? precision : "(null)"));
  Expected<Cell> changed = cell->cell.withPrecision(*parsed);
  if (!changed)
    return fail(changed.error());
  cell->cell = std::move(*changed);
  return 0;
}

int64_t cellrt_cell_num_dims(const cellrt_cell *cell) {
  return cell->cell.getPlan().dims.size();
}
const char *cellrt_cell_dim_name(const cellrt_cell *cell, int64_t index) {
  return cell->cell.getPlan().dims.at(index).c_str();
}
int64_t cellrt_cell_num_probes(const cellrt_cell *cell) {
  return cell->cell.getPlan().probes.size();
}
const char *cellrt_cell_probe_name(const cellrt_cell *cell, int64_t index) {
  return nameAt(cell->cell.getPlan().probes, index);
}

const char *cellrt_cell_input_name(const cellrt_cell *cell, int64_t index) {
  return nameAt(cell->cell.getPlan().inputs, index);
}
int64_t cellrt_cell_input_length(const cellrt_cell *cell, int64_t index,
                                 const int64_t *dims) {
  return lengthAt(cell, cell->cell.getPlan().inputs, index, dims);
}
const char *cellrt_cell_state_name(const cellrt_cell *cell, int64_t index) {
  return nameAt(cell->cell.getPlan().states, index);
}
int64_t cellrt_cell_state_length(const cellrt_cell *cell, int64_t index,
                                 const int64_t *dims) {
  return lengthAt(cell, cell->cell.getPlan().states, index, dims);
}
int64_t cellrt_cell_num_params(const cellrt_cell *cell) {
  return cell->cell.getPlan().params.size();
}
const char *cellrt_cell_param_name(const cellrt_cell *cell, int64_t index) {
  return nameAt(cell->cell.getPlan().params, index);
}
int64_t cellrt_cell_param_rank(const cellrt_cell *cell, int64_t index) {
  const auto &params = cell->cell.getPlan().params;
  return inRange(params, index) ? params[index].shape.size() : -1;
}
int64_t cellrt_cell_param_extent(const cellrt_cell *cell, int64_t index,
                                 int64_t axis, const int64_t *dims) {
  const auto &params = cell->cell.getPlan().params;
  if (!inRange(params, index) || !inRange(params[index].shape, axis))
    return -1;
  return evaluateFor(cell, params[index].shape[axis], dims);
}
int64_t cellrt_cell_output_width(const cellrt_cell *cell,
                                 const int64_t *dims) {
  return evaluateFor(cell, cell->cell.getPlan().outputWidth, dims);
}

const char *cellrt_cell_param_init(const cellrt_cell *cell, int64_t index) {
  return inRange(cell->paramInits, index) ? cell->paramInits[index].c_str()
                                          : nullptr;
}

int cellrt_init_params(const cellrt_cell *cell, const int64_t *dims,
                       const cellrt_param *params, int64_t num_params,
                       uint64_t seed, const char *fallback) {
  std::optional<InitScheme> scheme =
      InitScheme::parseWritten(fallback ? fallback : "(null)");
  if (!scheme)
    return fail(std::string("cellrt_init_params: the fallback must be a "
                            "scheme such as \"fan_in\", \"uniform(0.1)\" "
                            "or \"none\", not \"") +
                (fallback ? fallback : "(null)") + "\"");
  const Plan &plan = cell->cell.getPlan();
  if (!dims && !plan.dims.empty())
    return fail("cellrt_init_params: dims is NULL, but cell '" + plan.cellName +
                "' has dims");
  Translation t;
  for (size_t i = 0; i < plan.dims.size(); ++i)
    t.dims[plan.dims[i]] = dims[i];
  std::map<std::string, MutableArray> arrays;
  for (int64_t i = 0; i < num_params; ++i) {
    const ParamDecl *param = plan.findParam(params[i].name);
    if (!param)
      return fail("cell '" + plan.cellName + "' has no param '" +
                  params[i].name + "'");
    arrays[param->name] = {params[i].data, t.paramShape(*param)};
  }
  return report(cell->cell.initParams(arrays, seed, *scheme));
}

int64_t cellrt_cell_num_inputs(const cellrt_cell *cell) {
  return cell->cell.getPlan().inputs.size();
}
int64_t cellrt_cell_num_states(const cellrt_cell *cell) {
  return cell->cell.getPlan().states.size();
}
int cellrt_cell_has_backward(const cellrt_cell *cell) {
  return cell->cell.hasBackward() ? 1 : 0;
}

cellrt_tape *cellrt_tape_new(void) { return new cellrt_tape; }
void cellrt_tape_free(cellrt_tape *tape) { delete tape; }

int cellrt_forward(const cellrt_cell *cell, const cellrt_run_args *args,
                   cellrt_tape *tape) {
  Translation t;
  if (t.translate(cell->cell.getPlan(), *args, args->steps))
    return 1;
  return report(tape ? cell->cell.forward(t.args, tape->tape)
                     : cell->cell.forward(t.args));
}

int cellrt_backward(const cellrt_cell *cell, const cellrt_run_args *args,
                    const cellrt_gradients *gradients, cellrt_tape *tape) {
  const Plan &plan = cell->cell.getPlan();
  Translation t;
  if (t.translate(plan, *args, args->steps))
    return 1;
  BackwardArgs g;
  g.outputGradient = {gradients->output_gradient, t.args.output.shape};
  for (size_t i = 0; i < plan.states.size(); ++i) {
    const std::vector<int64_t> &shape = t.args.initialStates[i].shape;
    g.finalStateGradients.push_back(
        {gradients->final_state_gradients
             ? gradients->final_state_gradients[i]
             : nullptr,
         shape});
    g.initialStateGradients.push_back(
        {gradients->initial_state_gradients
             ? gradients->initial_state_gradients[i]
             : nullptr,
         shape});
  }
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    g.inputGradients.push_back(
        {gradients->input_gradients ? gradients->input_gradients[i] : nullptr,
         t.args.inputs[i].shape});
  for (int64_t i = 0; i < gradients->num_param_gradients; ++i) {
    const cellrt_param &param = gradients->param_gradients[i];
    auto known = t.args.params.find(param.name);
    if (known == t.args.params.end())
      return fail(std::string("gradient of param '") + param.name +
                  "', which the run arguments do not pass");
    g.paramGradients[param.name] = {param.data, known->second.shape};
  }
  return report(cell->cell.backward(t.args, g, tape->tape));
}

int cellrt_step(const cellrt_cell *cell, const cellrt_run_args *args,
                const int32_t *source_rows) {
  const Plan &plan = cell->cell.getPlan();
  Translation t;
  if (t.translate(plan, *args, 1))
    return 1;
  StepArgs step;
  for (const ConstArray &input : t.args.inputs)
    step.inputs.push_back({input.data, {input.shape[1], input.shape[2]}});
  step.states = t.args.initialStates;
  step.sourceRows = source_rows;
  step.params = t.args.params;
  step.output = {t.args.output.data,
                 {t.args.output.shape[1], t.args.output.shape[2]}};
  step.nextStates = t.args.finalStates;
  for (const MutableArray &probe : t.args.probes)
    step.probes.push_back({probe.data, {probe.shape[1], probe.shape[2]}});
  return report(cell->cell.step(step));
}

const char *cellrt_last_error(void) { return lastError.c_str(); }

} // extern "C"
