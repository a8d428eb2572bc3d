//===- ExecutionBackward.cpp - Backpropagation through a recorded forward ---===//
//
// backward() runs the `bstep` operations from the last step down to the
// first over the tape a training forward recorded, then the `bpre`
// operations over all rows and the `wgrad`/`pgrad` reductions
// (docs/plan-format.md, "Training: the backward directives").
//
//===----------------------------------------------------------------------===//

#include "Execution.h"
#include "Schedules.h"

using namespace cellrt;

namespace cellrt::detail {

/// Adds `source` [T, B, width] to `target`, reversing every sequence within
/// its length (reverse = false: unchanged); padded steps are left alone.
/// Host memory.
static void addWithinLengths(const float *source, float *target, int64_t steps,
                             int64_t batch, int64_t width,
                             const int32_t *lengths, bool reverse) {
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t b = 0; b < batch; ++b) {
      if (t >= lengths[b])
        continue;
      int64_t from = reverse ? lengths[b] - 1 - t : t;
      const float *in = source + (from * batch + b) * width;
      float *out = target + (t * batch + b) * width;
      for (int64_t j = 0; j < width; ++j)
        out[j] += in[j];
    }
}

/// Gradient buffers are the buffers only backward operations reference.
void Execution::zeroGradientBuffers() {
  std::vector<bool> forwardUse(plan.buffers.size(), false),
      backwardUse(plan.buffers.size(), false);
  for (const Operation &op : plan.operations)
    for (const Ref &ref : op.operands)
      if (ref.kind == Ref::Kind::Seq || ref.kind == Ref::Kind::Step)
        (isBackward(op.phase) ? backwardUse
                              : forwardUse)[plan.bufferIndex(ref.name)] = true;
  int64_t steps = sizes.steps, batch = sizes.batch;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    if (!backwardUse[i] || forwardUse[i])
      continue;
    int64_t length = sizes.eval(plan.buffers[i].length);
    // Kernels store every row of a written buffer, but the step loop stops
    // at the longest sequence: the later steps' rows stay zero.
    int64_t first = plan.buffers[i].written ? maxLength * batch : 0;
    device.zero(work.buffers[i] + first * length,
                (steps * batch - first) * length);
  }
}

Status Execution::setUpGradients(const BackwardArgs &gradients,
                                 Blocks &blocks) {
  int64_t steps = sizes.steps, batch = sizes.batch;
  blocks.rewind();
  // Allocate (and mirror) everything first, then write.
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t count = batch * width(plan.states[i]);
    grads.dnext.push_back(blocks.allocate(count));
    grads.dstate.push_back(blocks.allocate(count));
    float *target = i < gradients.initialStateGradients.size()
                        ? gradients.initialStateGradients[i].data
                        : nullptr;
    grads.initialTargets.push_back(
        target ? mirrorBack(target, count, blocks) : nullptr);
  }
  outputWidth = sizes.eval(plan.kernelOutputWidth());
  const float *dOutput = widenOutputGradient(gradients.outputGradient.data);
  // With probes the kernels read a widened host copy, not the caller's.
  bool doutIsCallers = plan.probes.empty();
  bool zeroDout = false;
  float *reversedDout = nullptr;
  if (!dOutput) {
    // Read only: one zero step serves every step.
    grads.dout = blocks.allocate(batch * outputWidth);
    zeroDout = true;
  } else if (args.reverse) {
    grads.dout = reversedDout = blocks.allocate(steps * batch * outputWidth);
    grads.doutStepAdvance = batch * outputWidth;
  } else {
    int64_t count = steps * batch * outputWidth;
    grads.dout = doutIsCallers ? mirror(dOutput, count, blocks)
                               : staged(dOutput, count, blocks);
    grads.doutStepAdvance = batch * outputWidth;
  }
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    bool used = false;
    for (const Operation &op : plan.operations)
      for (const Ref &ref : op.operands)
        used |=
            ref.kind == Ref::Kind::Dinput && ref.name == plan.inputs[i].name;
    float *callers = i < gradients.inputGradients.size()
                         ? gradients.inputGradients[i].data
                         : nullptr;
    int64_t count = steps * batch * width(plan.inputs[i]);
    // Kernels that store a gradient (`written`) write zeroed scratch,
    // added to the caller's array afterwards.
    bool direct = used && callers && !args.reverse &&
                  !plan.inputs[i].gradientWritten;
    grads.dinputs.push_back(!used    ? nullptr
                            : direct ? mirrorBack(callers, count, blocks)
                                     : blocks.allocate(count));
    grads.dinputScratch.push_back(used && !direct);
  }
  for (const auto &[name, array] : gradients.paramGradients)
    if (array.data)
      grads.params[name] = mirrorBack(array.data, paramCount(name), blocks);
  Status status = blocks.status();
  if (!status.ok())
    return status;

  uploadPending();
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t count = batch * width(plan.states[i]);
    if (i < gradients.finalStateGradients.size() &&
        gradients.finalStateGradients[i].data)
      importCaller(grads.dnext[i], gradients.finalStateGradients[i].data,
                   count);
    else
      device.zero(grads.dnext[i], count);
  }
  if (zeroDout)
    device.zero(grads.dout, batch * outputWidth);
  if (reversedDout)
    importReversed(dOutput, doutIsCallers, reversedDout, outputWidth);
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    if (grads.dinputScratch[i])
      device.zero(grads.dinputs[i], steps * batch * width(plan.inputs[i]));
  return Status::success();
}

Status Execution::finishBackward(const BackwardArgs &gradients) {
  // After the step loop `dnext` is the gradient of the initial state.
  for (size_t i = 0; i < plan.states.size(); ++i)
    if (float *target = grads.initialTargets[i])
      device.accumulate(target, grads.dnext[i],
                        sizes.batch * width(plan.states[i]));
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    float *callers = i < gradients.inputGradients.size()
                         ? gradients.inputGradients[i].data
                         : nullptr;
    if (!grads.dinputScratch[i] || !callers)
      continue;
    int64_t inputWidth = width(plan.inputs[i]);
    int64_t count = sizes.steps * sizes.batch * inputWidth;
    const float *scratch = grads.dinputs[i];
    std::vector<float> host, callersOnHost;
    if (!shared) {
      host.resize(count);
      device.download(host.data(), scratch, host.size() * sizeof(float));
      scratch = host.data();
    }
    // The sum runs on the host: a caller's device array goes there and back.
    float *target = callers;
    if (callerOnDevice)
      target = const_cast<float *>(callerOnHost(callers, count, callersOnHost));
    addWithinLengths(scratch, target, sizes.steps, sizes.batch, inputWidth,
                     args.lengths, args.reverse);
    if (callerOnDevice)
      device.upload(callers, target, size_t(count) * sizeof(float));
  }
  for (const WriteBack &back : grads.writeBacks)
    device.download(back.host, back.device, back.count * sizeof(float));
  return device.synchronize();
}

Status Execution::backward(const BackwardArgs &gradients,
                           Blocks &gradientBlocks) {
  gradientArgs = &gradients;
  findCallerParams();
  refreshCallerPointers();
  Status status = setUpGradients(gradients, gradientBlocks);
  if (!status.ok())
    return status;
  zeroGradientBuffers();
  if (!(status = bindOperations(/*backwardPhases=*/true, gradientBlocks)).ok())
    return status;

  // The forward's schedule: a scan's plan keeps its steps for training.
  status = work.schedule == ScheduleKind::Tiled
               ? TiledSchedule(*this).backwardSteps()
               : StepSchedule(*this).backwardSteps();
  if (!status.ok())
    return status;
  int64_t allRows = sizes.steps * sizes.batch;

  // In bf16 the products below round the same gradients and inputs for the
  // input gradient and for each stacked part of each weight gradient: they
  // round each once, where no kernel writes between them.
  KeepRoundedOperands keep(device.precision() == Precision::BF16 &&
                           onlyProductsAfterTheSteps());
  for (const BoundOperation &bound : sequenceOperations)
    if (!(status = runOperation(bound, 0, 0, allRows)).ok())
      return status;
  for (const BoundOperation &bound : endOperations)
    if (!(status = runOperation(bound, 0, 0, allRows)).ok())
      return status;
  return finishBackward(gradients);
}

/// `pgrad`'s sums write only the caller's bias gradients, which no product
/// reads, so they keep the rounded copies valid too.
bool Execution::onlyProductsAfterTheSteps() const {
  for (const BoundList *list : {&sequenceOperations, &endOperations})
    for (const BoundOperation &bound : *list)
      if (bound.op->kind == Operation::Kind::Kernel)
        return false;
  return true;
}

} // namespace cellrt::detail
