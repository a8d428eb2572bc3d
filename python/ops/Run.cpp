//===- python/ops/Run.cpp - The op cellc::run, with its autograd ----------===//

#include "Run.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

namespace cellc::ops {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::string label(const cellrt::Plan &plan) {
  return "cellc::run (cell " + plan.cellName + "): ";
}

/// A ValueError or TypeError naming `what` unless `tensor` is one cellrt
/// can read in place.
void checkTensor(const cellrt::Plan &plan, const at::Tensor &tensor,
                 const std::string &what) {
  TORCH_CHECK_VALUE(tensor.defined(), label(plan), what, " is undefined");
  TORCH_CHECK_VALUE(tensor.device().is_cpu(), label(plan), what, " is on ",
                    tensor.device(), ": cellc runs on the CPU (.cpu())");
  TORCH_CHECK_TYPE(tensor.scalar_type() == at::kFloat, label(plan), what,
                   " must be float32, got ", tensor.scalar_type(),
                   " (cellrt computes in float32: .float())");
  TORCH_CHECK_VALUE(tensor.is_contiguous(), label(plan), what,
                    " must be contiguous (.contiguous())");
}

/// Counts the runtime cannot check from shapes, then every tensor.
void checkCall(const cellrt::Plan &plan, at::TensorList inputs,
               at::TensorList init, at::TensorList params) {
  TORCH_CHECK_VALUE(!plan.inputs.empty(), label(plan),
                    "the cell has no inputs: run takes input sequences");
  TORCH_CHECK_VALUE(inputs.size() == plan.inputs.size(), label(plan), "takes ",
                    plan.inputs.size(), " inputs, got ", inputs.size());
  TORCH_CHECK_VALUE(init.empty() || init.size() == plan.states.size(),
                    label(plan), "init holds one tensor per state (",
                    plan.states.size(), ") or none (zeros), got ", init.size());
  TORCH_CHECK_VALUE(params.size() == plan.params.size(), label(plan), "takes ",
                    plan.params.size(), " params in the cell's order, got ",
                    params.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string what = "input '" + plan.inputs[i].name + "'";
    checkTensor(plan, inputs[i], what);
    TORCH_CHECK_VALUE(inputs[i].dim() == 3, label(plan), what,
                      " must be [T, B, ", plan.inputs[i].length.str(),
                      "] (time-major), got shape ", inputs[i].sizes());
  }
  for (size_t i = 0; i < init.size(); ++i)
    checkTensor(plan, init[i], "initial state '" + plan.states[i].name + "'");
  for (size_t i = 0; i < params.size(); ++i)
    checkTensor(plan, params[i], "param '" + plan.params[i].name + "'");
}

/// `lengths` as B step counts in [1, steps].
std::vector<int32_t> readLengths(const cellrt::Plan &plan,
                                 const at::Tensor &lengths, int64_t steps,
                                 int64_t batch) {
  TORCH_CHECK_VALUE(
      lengths.defined() && lengths.dim() == 1 && lengths.device().is_cpu(),
      label(plan), "lengths must be a 1-D CPU tensor of B = ", batch,
      " integers");
  TORCH_CHECK_TYPE(at::isIntegralType(lengths.scalar_type(), false),
                   label(plan), "lengths must hold integers, got ",
                   lengths.scalar_type());
  TORCH_CHECK_VALUE(lengths.size(0) == batch, label(plan), "lengths has ",
                    lengths.size(0), " entries for a batch of ", batch);
  at::Tensor values = lengths.to(at::kLong).contiguous();
  const int64_t *data = values.data_ptr<int64_t>();
  std::vector<int32_t> result;
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK_VALUE(data[b] >= 1 && data[b] <= steps, label(plan), "lengths[",
                      b, "] = ", data[b], " is outside [1, T] = [1, ", steps,
                      "]");
    result.push_back(int32_t(data[b]));
  }
  return result;
}

cellrt::ConstArray constView(const at::Tensor &tensor) {
  return {tensor.data_ptr<float>(), tensor.sizes().vec()};
}

cellrt::MutableArray mutableView(const at::Tensor &tensor) {
  return {tensor.data_ptr<float>(), tensor.sizes().vec()};
}

/// The forward arguments of `record`'s call over `tensors` (its inputs,
/// initial states and params, in that order); output and final states are
/// left unset.
cellrt::ForwardArgs bindArgs(const CallRecord &record, at::TensorList tensors) {
  const cellrt::Plan &plan = record.runtime->getPlan();
  cellrt::ForwardArgs args;
  size_t next = 0;
  for (; next < record.numInputs; ++next)
    args.inputs.push_back(constView(tensors[next]));
  for (size_t s = 0; s < record.numInit; ++s)
    args.initialStates.push_back(constView(tensors[next++]));
  for (const cellrt::ParamDecl &param : plan.params)
    args.params[param.name] = constView(tensors[next++]);
  args.lengths = record.lengths.data();
  args.reverse = record.reverse;
  return args;
}

int64_t evaluate(const cellrt::Plan &plan, const cellc::DimExpr &length,
                 const cellrt::BoundSizes &sizes) {
  std::optional<int64_t> value = length.evaluate(sizes.dims);
  TORCH_CHECK(value, label(plan), "cannot size ", length.str());
  return *value;
}

/// Runs `record`'s call forward (recording its tape when `recording`);
/// returns the output and the final states.
variable_list runForward(CallRecord &record, at::TensorList tensors,
                         bool recording) {
  const cellrt::Plan &plan = record.runtime->getPlan();
  cellrt::ForwardArgs args = bindArgs(record, tensors);
  cellrt::Expected<cellrt::BoundSizes> sizes = cellrt::bindSizes(plan, args);
  TORCH_CHECK_VALUE(sizes, label(plan), sizes.error());
  variable_list results = {at::zeros(
      {sizes->steps, sizes->batch, evaluate(plan, plan.outputWidth, *sizes)})};
  args.output = mutableView(results[0]);
  for (const cellrt::VectorDecl &state : plan.states) {
    results.push_back(
        at::zeros({sizes->batch, evaluate(plan, state.length, *sizes)}));
    args.finalStates.push_back(mutableView(results.back()));
  }
  cellrt::Status status = recording ? record.runtime->forward(args, record.tape)
                                    : record.runtime->forward(args);
  TORCH_CHECK(status.ok(), label(plan), status.message());
  return results;
}

/// Frees `record`'s tape when autograd frees the saved tensors: after the
/// backward, unless the graph is retained (then backward may run again),
/// as the tensors' own memory is, not only when the graph itself goes.
at::Tensor releaseGuard(c10::intrusive_ptr<CallRecord> record) {
  return at::from_blob(
      record.get(), {0},
      [record](void *) mutable { record->tape = cellrt::Tape(); },
      at::TensorOptions(at::kFloat));
}

/// The gradients `gradients` (one per output, undefined for none) as the
/// runtime reads them, kept contiguous in `keep`.
cellrt::BackwardArgs outputGradients(const variable_list &gradients,
                                     variable_list &keep) {
  cellrt::BackwardArgs args;
  for (size_t i = 0; i < gradients.size(); ++i) {
    cellrt::ConstArray view;
    if (gradients[i].defined()) {
      keep.push_back(gradients[i].contiguous());
      view = constView(keep.back());
    }
    if (i == 0)
      args.outputGradient = view;
    else
      args.finalStateGradients.push_back(view);
  }
  return args;
}

struct RunFunction : torch::autograd::Function<RunFunction> {
  static variable_list forward(AutogradContext *ctx, at::TensorList tensors,
                               c10::intrusive_ptr<CallRecord> record) {
    bool recording = record->runtime->hasBackward();
    variable_list results = runForward(*record, tensors, recording);
    // cellrt's backward reads the inputs, initial states and params again:
    // saved, a change to one in place raises PyTorch's error in backward.
    variable_list saved(tensors.begin(), tensors.end());
    saved.push_back(releaseGuard(record));
    ctx->save_for_backward(saved);
    ctx->saved_data["record"] = std::move(record);
    return results;
  }

  static variable_list backward(AutogradContext *ctx, variable_list gradients) {
    auto record = ctx->saved_data["record"].toCustomClass<CallRecord>();
    const cellrt::Plan &plan = record->runtime->getPlan();
    // create_graph=True asks for a differentiable gradient, which cellrt's
    // backward kernels are not: fail here, not later without a graph.
    TORCH_CHECK(!at::GradMode::is_enabled(), label(plan),
                "no double backward (create_graph=True): the cell's "
                "backward kernels are not differentiable");
    variable_list saved = ctx->get_saved_variables();
    saved.pop_back();
    TORCH_CHECK(record->tape.isRecorded(), label(plan),
                "the cell was compiled without its backward (training=False)");
    variable_list keep;
    cellrt::BackwardArgs args = outputGradients(gradients, keep);
    variable_list results = wantedGradients(ctx, *record, saved, args);
    cellrt::Status status =
        record->runtime->backward(bindArgs(*record, saved), args, record->tape);
    TORCH_CHECK(status.ok(), label(plan), status.message());
    results.emplace_back(); // the record
    return results;
  }

  /// Zeroed gradients for the saved tensors autograd wants one for
  /// (undefined for the others), which `args` points the runtime at.
  static variable_list wantedGradients(AutogradContext *ctx,
                                       const CallRecord &record,
                                       const variable_list &saved,
                                       cellrt::BackwardArgs &args) {
    const cellrt::Plan &plan = record.runtime->getPlan();
    variable_list results;
    for (size_t i = 0; i < saved.size(); ++i) {
      at::Tensor gradient;
      if (ctx->needs_input_grad(i))
        gradient = at::zeros_like(saved[i]);
      results.push_back(gradient);
      cellrt::MutableArray view;
      if (gradient.defined())
        view = mutableView(gradient);
      size_t param = i - record.numInputs - record.numInit;
      if (i < record.numInputs)
        args.inputGradients.push_back(view);
      else if (i < record.numInputs + record.numInit)
        args.initialStateGradients.push_back(view);
      else if (gradient.defined())
        args.paramGradients[plan.params[param].name] = view;
    }
    return results;
  }
};

} // namespace

std::vector<at::Tensor> run(const c10::intrusive_ptr<ScriptCell> &cell,
                            at::TensorList inputs, at::TensorList init,
                            at::TensorList params, const at::Tensor &lengths,
                            bool reverse) {
  const cellrt::Plan &plan = cell->plan();
  checkCall(plan, inputs, init, params);
  auto record = c10::make_intrusive<CallRecord>();
  record->runtime = cell->runtime();
  record->object = cell->object();
  record->lengths =
      readLengths(plan, lengths, inputs[0].size(0), inputs[0].size(1));
  record->reverse = reverse;
  record->numInputs = inputs.size();
  record->numInit = init.size();
  std::vector<at::Tensor> tensors(inputs.begin(), inputs.end());
  tensors.insert(tensors.end(), init.begin(), init.end());
  tensors.insert(tensors.end(), params.begin(), params.end());
  bool wantsGradient =
      at::GradMode::is_enabled() &&
      std::any_of(tensors.begin(), tensors.end(),
                  [](const at::Tensor &t) { return t.requires_grad(); });
  // Without a gradient to compute, no tape (a training forward keeps every
  // step's buffers) and no graph.
  if (!wantsGradient)
    return runForward(*record, tensors, /*recording=*/false);
  return RunFunction::apply(at::TensorList(tensors), record);
}

} // namespace cellc::ops
