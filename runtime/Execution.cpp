//===- Execution.cpp - Run a plan over a padded batch -----------------------===//
//
// A forward call goes through three stages:
//   1. bind: derive the plan's dims from the shapes the caller passed and
//      check every array against them;
//   2. set up: allocate buffers and states, stack weights, reverse inputs
//      when running backwards, and resolve every operand of every operation
//      to a base pointer, row stride and per-step advance;
//   3. run: the `pre` operations over all T*B rows, then the `step`
//      operations for every step, swapping current and next states.
// Everything runs through a Device (cellrt/Device.h): the CPU's kernels and
// oneDNN in host memory, or a GPU's kernels and cuBLAS in its own memory,
// with the caller's arrays copied in and out. One executor for both, so the
// CPU tests prove the logic the GPU runs.
//
// Training mode (forward(args, tape)) keeps every step's `step:` buffers and
// the state history in the tape; backward() then runs the `bstep`
// operations from the last step down to the first, the `bpre` operations
// over all rows and the `wgrad`/`pgrad` operations (docs/plan-format.md,
// "Training: the backward directives").
//
//===----------------------------------------------------------------------===//

#include "Execution.h"
#include "cellrt/Products.h"
#include "Schedules.h"

#include <atomic>
#include <cstring>

using namespace cellrt;

namespace cellrt::detail {

static std::atomic<int64_t> bindings{0};
int64_t forwardBindings() { return bindings.load(); }

/// Copies `source` [T, B, width] into `target` with every sequence reversed
/// within its length; padded steps become zeros. Host memory.
static void reverseWithinLengths(const float *source, float *target,
                                 int64_t steps, int64_t batch, int64_t width,
                                 const int32_t *lengths) {
  for (int64_t t = 0; t < steps; ++t)
    for (int64_t b = 0; b < batch; ++b) {
      float *row = target + (t * batch + b) * width;
      if (t < lengths[b])
        std::memcpy(row, source + ((lengths[b] - 1 - t) * batch + b) * width,
                    width * sizeof(float));
      else
        std::memset(row, 0, width * sizeof(float));
    }
}

float *Execution::staged(const float *host, int64_t count, Blocks &blocks) {
  // Kernels take non-const pointers but never write their inputs.
  if (shared || !host)
    return const_cast<float *>(host);
  float *copy = blocks.allocate(count);
  pendingUploads.push_back({const_cast<float *>(host), copy, count});
  return copy;
}

float *Execution::mirror(const float *caller, int64_t count, Blocks &blocks) {
  return inPlace ? const_cast<float *>(caller) : staged(caller, count, blocks);
}

float *Execution::mirrorBack(float *caller, int64_t count, Blocks &blocks) {
  float *copy = mirror(caller, count, blocks);
  if (copy != caller)
    grads.writeBacks.push_back({caller, copy, count});
  return copy;
}

void Execution::importCaller(float *target, const float *caller,
                             int64_t count) {
  size_t bytes = size_t(count) * sizeof(float);
  if (callerOnDevice)
    device.copy(target, caller, bytes);
  else
    device.upload(target, caller, bytes);
}

void Execution::exportCaller(float *caller, const float *source,
                             int64_t count) {
  size_t bytes = size_t(count) * sizeof(float);
  if (caller == source)
    return;
  if (callerOnDevice)
    device.copy(caller, source, bytes);
  else
    device.download(caller, source, bytes);
}

const float *Execution::callerOnHost(const float *caller, int64_t count,
                                     std::vector<float> &copy) {
  if (!callerOnDevice)
    return caller;
  copy.resize(count);
  device.download(copy.data(), caller, copy.size() * sizeof(float));
  return copy.data();
}

void Execution::uploadPending() {
  for (const WriteBack &upload : pendingUploads)
    device.upload(const_cast<float *>(upload.device), upload.host,
                  upload.count * sizeof(float));
  pendingUploads.clear();
}

void Execution::importReversed(const float *source, bool fromCaller,
                               float *target, int64_t width) {
  int64_t count = sizes.steps * sizes.batch * width;
  // The reversal runs on the host: a caller's device rows go there first.
  std::vector<float> downloaded;
  const float *host =
      fromCaller ? callerOnHost(source, count, downloaded) : source;
  if (shared) {
    reverseWithinLengths(host, target, sizes.steps, sizes.batch, width,
                         args.lengths);
    return;
  }
  std::vector<float> reversed(count);
  reverseWithinLengths(host, reversed.data(), sizes.steps, sizes.batch, width,
                       args.lengths);
  device.upload(target, reversed.data(), reversed.size() * sizeof(float));
}

bool Execution::readsOutRows() const {
  if (args.output.data)
    return true;
  return std::any_of(args.probes.begin(), args.probes.end(),
                     [](const MutableArray &probe) { return probe.data; });
}

void Execution::exportOutputAndProbes() {
  int64_t rows = sizes.steps * sizes.batch;
  std::vector<float> outRows(rows * outputWidth);
  if (args.reverse)
    exportReversed(work.outputBase, outRows.data(), outputWidth,
                   /*toCaller=*/false);
  else
    device.download(outRows.data(), work.outputBase,
                    outRows.size() * sizeof(float));
  std::vector<float> columns;
  auto exportColumns = [&](float *target, int64_t column, int64_t count) {
    float *host = target;
    if (callerOnDevice) {
      columns.resize(rows * count);
      host = columns.data();
    }
    for (int64_t row = 0; row < rows; ++row)
      std::copy_n(outRows.data() + row * outputWidth + column, count,
                  host + row * count);
    if (callerOnDevice)
      device.upload(target, host, columns.size() * sizeof(float));
  };
  int64_t column = sizes.eval(plan.outputWidth);
  if (args.output.data)
    exportColumns(args.output.data, 0, column);
  for (size_t i = 0; i < plan.probes.size(); ++i) {
    int64_t count = width(plan.probes[i]);
    if (i < args.probes.size() && args.probes[i].data)
      exportColumns(args.probes[i].data, column, count);
    column += count;
  }
}

const float *Execution::widenOutputGradient(const float *dOutput) {
  if (plan.probes.empty() || !dOutput)
    return dOutput;
  int64_t rows = sizes.steps * sizes.batch, own = sizes.eval(plan.outputWidth);
  std::vector<float> downloaded;
  dOutput = callerOnHost(dOutput, rows * own, downloaded);
  widenedDout.assign(rows * outputWidth, 0.0f);
  for (int64_t row = 0; row < rows; ++row)
    std::copy_n(dOutput + row * own, own, widenedDout.data() + row * outputWidth);
  return widenedDout.data();
}

void Execution::exportReversed(const float *source, float *target,
                               int64_t width, bool toCaller) {
  if (shared) {
    reverseWithinLengths(source, target, sizes.steps, sizes.batch, width,
                         args.lengths);
    return;
  }
  std::vector<float> rows(sizes.steps * sizes.batch * width);
  device.download(rows.data(), source, rows.size() * sizeof(float));
  if (!toCaller || !callerOnDevice) {
    reverseWithinLengths(rows.data(), target, sizes.steps, sizes.batch, width,
                         args.lengths);
    return;
  }
  // The reversal runs on the host; the caller's rows are on the device.
  std::vector<float> reversed(rows.size());
  reverseWithinLengths(rows.data(), reversed.data(), sizes.steps, sizes.batch,
                       width, args.lengths);
  device.upload(target, reversed.data(), reversed.size() * sizeof(float));
}

void Execution::findCallerParams() {
  work.callerParams.resize(plan.params.size());
  if (!args.paramsByIndex.empty()) {
    for (size_t i = 0; i < plan.params.size(); ++i)
      work.callerParams[i] = args.paramsByIndex[i].data;
    return;
  }
  size_t entry = 0;
  for (const auto &[name, array] : args.params)
    work.callerParams[sizes.paramOrder[entry++]] = array.data;
}

Status Execution::setUp() {
  int64_t steps = sizes.steps, batch = sizes.batch;
  Blocks &blocks = work.blocks;
  work.reset(plan);
  findCallerParams();
  // Allocate everything first: nothing is written unless all of it fits.
  // A call with the same BindingKey asks for the same blocks in the same
  // order, so the operands bound by an earlier call still point at them.
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    int64_t rows =
        plan.buffers[i].extent == BufferDecl::Extent::Sequence || training
            ? steps * batch
            : batch;
    work.buffers[i] = blocks.allocate(rows * layout.bufferLengths[i]);
  }
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t count = batch * layout.stateWidths[i];
    work.currentStates[i] =
        blocks.allocate(training ? (steps + 1) * count : count);
    work.nextStates[i] = training ? nullptr : blocks.allocate(count);
  }
  outputWidth = layout.kernelOutputWidth;
  if (!readsOutRows()) {
    // Nobody reads the output: one step's worth of scratch is enough.
    work.outputBase = blocks.allocate(batch * outputWidth);
  } else if (args.reverse || !inPlace || !plan.probes.empty()) {
    work.outputBase = blocks.allocate(steps * batch * outputWidth);
    work.outputStepAdvance = batch * outputWidth;
  } else {
    work.outputBase = args.output.data;
    work.outputStepAdvance = batch * outputWidth;
  }
  if (shared) {
    work.lengths = args.lengths;
    work.dims = dimValues.data();
  } else {
    work.lengths = static_cast<int32_t *>(blocks.allocateBytes(batch * 4));
    work.dims = static_cast<int64_t *>(
        blocks.allocateBytes(dimValues.size() * sizeof(int64_t)));
  }
  std::vector<float *> reversedInputs(plan.inputs.size(), nullptr);
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    int64_t count = steps * batch * layout.inputWidths[i];
    work.inputs[i] = args.reverse
                         ? (reversedInputs[i] = blocks.allocate(count))
                         : mirror(args.inputs[i].data, count, blocks);
  }
  const DeviceWeights *resident = residentWeights();
  for (size_t i = 0; i < plan.params.size(); ++i) {
    const std::string &name = plan.params[i].name;
    float *onDevice = resident ? resident->find(name) : nullptr;
    work.params[i] = onDevice ? onDevice
                              : mirror(paramData(i), layout.paramCounts[i],
                                       blocks);
  }
  stackWeights();
  Status status = blocks.status();
  if (!status.ok())
    return status;

  uploadPending();
  if (!shared) {
    device.upload(const_cast<int32_t *>(work.lengths), args.lengths,
                  batch * 4);
    device.upload(const_cast<int64_t *>(work.dims), dimValues.data(),
                  dimValues.size() * sizeof(int64_t));
  }
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    if (reversedInputs[i])
      importReversed(args.inputs[i].data, /*fromCaller=*/true,
                     reversedInputs[i], layout.inputWidths[i]);
  // Training: steps no sequence reaches are never run, but weight gradients
  // read every row; keep those rows finite.
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (training && plan.buffers[i].extent == BufferDecl::Extent::Step) {
      int64_t length = layout.bufferLengths[i];
      device.zero(work.buffers[i] + maxLength * batch * length,
                  (steps - maxLength) * batch * length);
    }
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t count = batch * layout.stateWidths[i];
    if (i < args.initialStates.size() && args.initialStates[i].data)
      importCaller(work.currentStates[i], args.initialStates[i].data, count);
    else
      device.zero(work.currentStates[i], count);
  }
  // Stacked weights: the params' rows one after another, from the caller's
  // arrays.
  for (size_t w = 0; w < plan.weights.size(); ++w) {
    const WeightDecl &weight = plan.weights[w];
    if (weight.params.size() == 1 || usesPackedWeights())
      continue;
    int64_t cols = layout.weightCols[w];
    float *row = const_cast<float *>(work.weights[w]);
    for (int64_t param : layout.weightParams[w]) {
      int64_t count = layout.paramRows[param] * cols;
      importCaller(row, paramData(param), count);
      row += count;
    }
  }
  return Status::success();
}

void Execution::stackWeights() {
  if (const DeviceWeights *resident = residentWeights()) {
    work.weights = resident->weights;
    return;
  }
  if (usesPackedWeights()) {
    work.weights = args.packedWeights->pointers();
    return;
  }
  for (size_t w = 0; w < plan.weights.size(); ++w)
    work.weights[w] =
        layout.weightParams[w].size() == 1
            ? work.params[layout.weightParams[w][0]]
            : work.blocks.allocate(layout.weightRows[w] * layout.weightCols[w]);
}

/// backward() may get the same values at other addresses than forward did:
/// point the executable at the caller's arrays again. (A device with its own
/// memory keeps the copies forward made.)
void Execution::refreshCallerPointers() {
  if (!inPlace)
    return;
  if (shared) {
    work.lengths = args.lengths;
    work.dims = dimValues.data();
  }
  if (!args.reverse)
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      work.inputs[i] = const_cast<float *>(args.inputs[i].data);
  for (size_t i = 0; i < plan.params.size(); ++i)
    work.params[i] = const_cast<float *>(paramData(i));
  for (size_t w = 0; w < plan.weights.size(); ++w)
    if (layout.weightParams[w].size() == 1)
      work.weights[w] = work.params[layout.weightParams[w][0]];
}

Expected<Operand> Execution::bindOperand(const Operation &op, const Ref &ref,
                                         const OperandLayout &at) {
  Operand operand;
  int64_t arrayWidth = at.arrayWidth;
  operand.column = at.column;
  if (operand.column < 0 || operand.column > arrayWidth)
    return Status::error(planError(
        op, "column offset of " + quote(ref.str()) + " is " +
                std::to_string(operand.column) + ", outside its array of " +
                std::to_string(arrayWidth) + " columns"));
  operand.stride = arrayWidth;
  bool perStep = op.phase == Phase::Step || op.phase == Phase::BStep ||
                 op.phase == Phase::Scan;
  int64_t stepFloats = perStep ? rowsPerStep * arrayWidth : 0;
  switch (ref.kind) {
  case Ref::Kind::Input:
    operand.array = &work.inputs[at.index];
    operand.stepAdvance = stepFloats;
    return operand;
  case Ref::Kind::Seq:
    operand.base = work.buffers[at.index];
    operand.stepAdvance = stepFloats;
    break;
  case Ref::Kind::Step:
    operand.base = work.buffers[at.index];
    // Training keeps every step's values (T-indexed).
    operand.stepAdvance = training ? stepFloats : 0;
    break;
  case Ref::Kind::State:
  case Ref::Kind::Next: {
    int64_t index = at.index;
    bool next = ref.kind == Ref::Kind::Next;
    if (!training) {
      operand.slot =
          next ? &work.nextStates[index] : &work.currentStates[index];
      return operand;
    }
    // The history: block t before step t, block t+1 after it.
    operand.base =
        work.currentStates[index] + (next ? rowsPerStep * arrayWidth : 0);
    operand.stepAdvance = stepFloats;
    break;
  }
  case Ref::Kind::Param: {
    operand.array = &work.params[at.index];
    // A vector param is broadcast to every row.
    operand.stride = plan.params[at.index].isMatrix() ? arrayWidth : 0;
    return operand;
  }
  case Ref::Kind::Out:
    operand.array = &work.outputBase;
    operand.stepAdvance = work.outputStepAdvance;
    return operand;
  case Ref::Kind::Dnext:
  case Ref::Kind::Dstate: {
    int64_t index = at.index;
    operand.slot = ref.kind == Ref::Kind::Dnext ? &grads.dnext[index]
                                                : &grads.dstate[index];
    return operand;
  }
  case Ref::Kind::Dout:
    operand.base = grads.dout;
    operand.stepAdvance = grads.doutStepAdvance;
    break;
  case Ref::Kind::Dinput:
    operand.base = grads.dinputs[at.index];
    operand.stepAdvance = stepFloats;
    break;
  }
  operand.base += operand.column;
  return operand;
}

Status Execution::checkColumns(const Operation &op, const Ref &ref,
                               const OperandLayout &at, int64_t columns,
                               const char *role) const {
  int64_t arrayWidth = at.arrayWidth;
  int64_t first = at.column;
  if (first + columns <= arrayWidth)
    return Status::success();
  return Status::error(planError(
      op, std::string(role) + " " + quote(ref.str()) + " needs " + "columns [" +
              std::to_string(first) + ", " + std::to_string(first + columns) +
              ") but its array has " + std::to_string(arrayWidth)));
}

/// Wgrad and pgrad: where the caller's param gradients are accumulated.
Status Execution::bindGradients(BoundOperation &bound,
                                const OperationLayout &at) {
  const Operation &op = *bound.op;
  auto wanted = [&](const std::string &name) -> float * {
    auto it = grads.params.find(name);
    return it == grads.params.end() ? nullptr : it->second;
  };
  if (op.kind == Operation::Kind::Pgrad) {
    bound.gradient = wanted(op.param);
    bound.length = layout.paramRows[at.param];
    return checkColumns(op, op.operands[0], at.operands[0], bound.length,
                        "pgrad operand");
  }
  int64_t row = 0;
  for (int64_t param : layout.weightParams[at.weight]) {
    int64_t rows = layout.paramRows[param];
    if (float *gradient = wanted(plan.params[param].name))
      bound.parts.push_back({gradient, row, rows});
    row += rows;
  }
  // wgrad's operands are {DY, X}.
  Status status = checkColumns(op, op.wgradDy(), at.operands[0],
                               bound.weightRows, "wgrad DY");
  if (!status.ok())
    return status;
  return checkColumns(op, op.wgradX(), at.operands[1], bound.weightCols,
                      "wgrad X");
}

/// The list that runs an operation of `phase`.
static BoundList &listFor(Phase phase, BoundProgram &program) {
  switch (phase) {
  case Phase::Pre:
  case Phase::BPre:
    return program.sequence;
  case Phase::Step:
  case Phase::BStep:
    return program.steps;
  case Phase::Scan:
    return program.scan;
  case Phase::End:
    break;
  }
  return program.end;
}

Status Execution::bindOperations(bool backwardPhases, Blocks &scratchBlocks) {
  for (BoundList *list : {&sequenceOperations, &stepOperations,
                          &endOperations, &scanOperations})
    list->clear();
  // A scan replaces the step operations. Plans written before 2026-11-24
  // carried both, and their scans keep no state history: training runs
  // such a plan's steps.
  bool stepsRecordHistory =
      training && std::any_of(plan.operations.begin(), plan.operations.end(),
                              [](const Operation &op) {
                                return op.phase == Phase::Step;
                              });
  size_t maxOperands = 0;
  for (size_t o = 0; o < plan.operations.size(); ++o) {
    const Operation &op = plan.operations[o];
    const OperationLayout &at = layout.operations[o];
    if (isBackward(op.phase) != backwardPhases)
      continue;
    if (op.phase == Phase::Scan && stepsRecordHistory)
      continue;
    BoundOperation &bound = listFor(op.phase, program).append();
    bound.op = &op;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      Expected<Operand> operand = bindOperand(op, op.operands[i],
                                              at.operands[i]);
      if (!operand)
        return operand.getStatus();
      bound.operands.push_back(*operand);
    }
    Status status;
    if (op.kind == Operation::Kind::Kernel) {
      if (op.kernel >= device.numKernels())
        return Status::error(planError(op, "kernel " +
                                               std::to_string(op.kernel) +
                                               " is not in the image"));
      bool allRows = op.phase == Phase::Pre || op.phase == Phase::BPre ||
                     op.phase == Phase::End;
      int64_t rows = allRows ? sizes.steps * sizes.batch : sizes.batch;
      for (int64_t columns : at.scratchLengths) {
        if (!device.scratchPerRow())
          bound.scratchLengths.push_back(columns);
        else
          bound.scratch.push_back(
              {scratchBlocks.allocate(rows * columns), columns});
      }
    } else if (op.kind == Operation::Kind::Pgrad) {
      if (!(status = bindGradients(bound, at)).ok())
        return status;
    } else {
      bound.weightIndex = at.weight;
      bound.weightRows = layout.weightRows[at.weight];
      bound.weightCols = layout.weightCols[at.weight];
      bindWeight(bound);
      if (op.kind == Operation::Kind::Wgrad) {
        status = bindGradients(bound, at);
      } else {
        // Forward: OUT[., R] = IN[., C] W^T; backward: OUT[., C] += IN[., R] W.
        bool forwardGemm = !isBackward(op.phase);
        int64_t outColumns = forwardGemm ? bound.weightRows : bound.weightCols;
        int64_t inColumns = forwardGemm ? bound.weightCols : bound.weightRows;
        // gemm's operands are {OUT, IN}.
        if ((status = checkColumns(op, op.gemmOutput(), at.operands[0],
                                   outColumns, "gemm output"))
                .ok())
          status = checkColumns(op, op.gemmInput(), at.operands[1], inColumns,
                                "gemm input");
      }
      if (!status.ok())
        return status;
    }
    maxOperands =
        std::max(maxOperands, op.operands.size() + bound.scratch.size());
  }
  kernelPointers.reserve(maxOperands);
  // Scan kernels take a second stride per argument (its per-step advance).
  kernelStrides.reserve(2 * maxOperands);
  return scratchBlocks.status();
}

void Execution::bindWeight(BoundOperation &bound) {
  bound.weight = work.weights[bound.weightIndex];
  bound.packedProduct = nullptr;
  if (usesPackedWeights() && shared)
    bound.packedProduct =
        isBackward(bound.op->phase)
            ? args.packedWeights->backwardProduct(
                  bound.weightIndex, bound.weightRows, bound.weightCols)
            : args.packedWeights->product(bound.weightIndex, bound.weightRows,
                                          bound.weightCols);
  // Packed by a cell of the other precision: as if none were given, so
  // that the call packs its own.
  if (bound.packedProduct &&
      bound.packedProduct->precision() != device.precision())
    bound.packedProduct = nullptr;
}

void Execution::refreshWeights() {
  for (BoundList *list : {&sequenceOperations, &stepOperations,
                          &endOperations, &scanOperations})
    for (BoundOperation &bound : *list)
      if (bound.weightIndex >= 0)
        bindWeight(bound);
}

/// oneDNN's sgemm multiplies up to 3 rows by a weight read transposed as
/// fast as by one kept transposed (a matrix-vector product); from 4 rows on
/// it packs the weight first on every call (4 rows by LSTM's [2048, 512]:
/// 303 µs against 174 kept transposed, 10 rows 582 against 256), and a
/// weight packed once for its matmul runs faster still (Gemm.h: 10 rows 212
/// µs). Decoders' batches of up to 256 rows take it, which bounds the
/// primitives a PackedWeights keeps (one per row count); sgemm's packing
/// pays off over more rows. In bf16 every row count takes the packed
/// weight: the plain product would round the whole weight again.
Status Execution::runGemm(const BoundOperation &bound, int64_t step,
                          int64_t rowBegin, int64_t rowEnd) {
  constexpr int64_t kMinRowsForPacked = 4, kMaxRowsForPacked = 256;
  const Operand &out = bound.operands[0], &in = bound.operands[1];
  const float *inRows = in.at(step) + rowBegin * in.stride;
  float *outRows = out.at(step) + rowBegin * out.stride;
  int64_t rows = rowEnd - rowBegin;
  int64_t minRows =
      device.precision() == Precision::F32 ? kMinRowsForPacked : 1;
  const PackedProduct *packed = rows >= minRows && rows <= kMaxRowsForPacked
                                    ? bound.packedProduct
                                    : nullptr;
  // Forward: OUT[., R] = IN[., C] W^T; backward: OUT[., C] += IN[., R] W.
  if (detail::observingProducts()) {
    bool backward = isBackward(bound.op->phase);
    detail::observeProduct(
        {backward ? ProductRecord::Kind::Backward
                  : ProductRecord::Kind::Forward,
         rows, backward ? bound.weightCols : bound.weightRows,
         backward ? bound.weightRows : bound.weightCols, packed != nullptr});
  }
  if (isBackward(bound.op->phase))
    return packed
               ? device.gemmAccumulatePacked(
                     rows, bound.weightCols, bound.weightRows, inRows,
                     in.stride, bound.weight, bound.weightCols, *packed,
                     outRows, out.stride)
               : device.gemmAccumulate(rows, bound.weightCols, bound.weightRows,
                                       inRows, in.stride, bound.weight,
                                       bound.weightCols, outRows, out.stride);
  return packed
             ? device.gemmPacked(rows, bound.weightRows, bound.weightCols,
                                 inRows, in.stride, bound.weight,
                                 bound.weightCols, *packed, outRows, out.stride)
             : device.gemmTransposedWeight(
                   rows, bound.weightRows, bound.weightCols, inRows, in.stride,
                   bound.weight, bound.weightCols, outRows, out.stride);
}

Status Execution::runOperation(const BoundOperation &bound, int64_t step,
                               int64_t rowBegin, int64_t rowEnd) {
  const Operation &op = *bound.op;
  switch (op.kind) {
  case Operation::Kind::Gemm:
    return runGemm(bound, step, rowBegin, rowEnd);
  case Operation::Kind::Wgrad: {
    const Operand &dy = bound.operands[0], &x = bound.operands[1];
    for (const GradientPart &part : bound.parts) {
      if (detail::observingProducts())
        detail::observeProduct({ProductRecord::Kind::WeightGradient,
                                part.rows, bound.weightCols,
                                rowEnd - rowBegin});
      Status status = device.gemmAccumulateTransposedInput(
          part.rows, bound.weightCols, rowEnd - rowBegin,
          dy.at(0) + rowBegin * dy.stride + part.rowOffset, dy.stride,
          x.at(0) + rowBegin * x.stride, x.stride, part.gradient,
          bound.weightCols);
      if (!status.ok())
        return status;
    }
    return Status::success();
  }
  case Operation::Kind::Pgrad: {
    if (!bound.gradient)
      return Status::success();
    const Operand &ref = bound.operands[0];
    device.sumRows(ref.at(0) + rowBegin * ref.stride, rowEnd - rowBegin,
                   ref.stride, bound.length, bound.gradient);
    return Status::success();
  }
  case Operation::Kind::Kernel:
    break;
  }
  kernelPointers.clear();
  kernelStrides.clear();
  int64_t widest = 0;
  for (const Operand &operand : bound.operands) {
    kernelPointers.push_back(operand.at(step));
    kernelStrides.push_back(operand.stride);
    widest = std::max(widest, operand.stride);
  }
  for (const auto &[scratch, columns] : bound.scratch) {
    kernelPointers.push_back(scratch);
    kernelStrides.push_back(columns);
  }
  bool perStep = op.phase == Phase::Step || op.phase == Phase::BStep;
  KernelLaunch call;
  call.kernel = op.kernel;
  call.rowBegin = rowBegin;
  call.rowEnd = rowEnd;
  call.step = perStep ? step : 0;
  call.lengths = perStep ? work.lengths : nullptr;
  call.dims = work.dims;
  call.pointers = &kernelPointers;
  call.strides = &kernelStrides;
  call.scratchLengths = &bound.scratchLengths;
  call.work = (rowEnd - rowBegin) * widest;
  return device.launch(call);
}

/// A time-scan kernel runs every step of rows [0, B) in one call: `step`
/// carries T, and each argument's per-step advance follows its row stride.
Status Execution::runScan(const BoundOperation &bound) {
  kernelPointers.clear();
  kernelStrides.clear();
  int64_t widest = 0;
  for (const Operand &operand : bound.operands) {
    kernelPointers.push_back(operand.at(0));
    kernelStrides.push_back(operand.stride);
    widest = std::max(widest, operand.stride);
  }
  for (const Operand &operand : bound.operands)
    kernelStrides.push_back(operand.stepAdvance);
  for (const auto &[scratch, columns] : bound.scratch) {
    kernelPointers.push_back(scratch);
    kernelStrides.push_back(columns);
  }
  KernelLaunch call;
  call.kernel = bound.op->kernel;
  call.rowEnd = rowsPerStep;
  call.step = sizes.steps;
  call.lengths = work.lengths;
  call.dims = work.dims;
  call.pointers = &kernelPointers;
  call.strides = &kernelStrides;
  call.scratchLengths = &bound.scratchLengths;
  call.work = rowsPerStep * widest * sizes.steps;
  return device.launch(call);
}

Status Execution::finish() {
  int64_t batch = sizes.batch;
  if (readsOutRows()) {
    // Steps no sequence reaches were skipped; their outputs are zeros.
    int64_t stepFloats = batch * outputWidth;
    device.zero(work.outputBase + maxLength * stepFloats,
                (sizes.steps - maxLength) * stepFloats);
    if (!plan.probes.empty())
      exportOutputAndProbes();
    else if (args.reverse)
      exportReversed(work.outputBase, args.output.data, outputWidth,
                     /*toCaller=*/true);
    else
      exportCaller(args.output.data, work.outputBase, sizes.steps * stepFloats);
  }
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t count = batch * layout.stateWidths[i];
    const float *last = work.currentStates[i];
    if (training) {
      // The skipped steps carry the state: keep the history complete.
      float *history = work.currentStates[i];
      last = history + maxLength * count;
      for (int64_t t = maxLength + 1; t <= sizes.steps; ++t)
        device.copy(history + t * count, last, count * sizeof(float));
    }
    if (i < args.finalStates.size() && args.finalStates[i].data)
      exportCaller(args.finalStates[i].data, last, count);
  }
  return device.synchronize();
}

/// The per-step schedule's products, each by its weight packed once for
/// the call where the caller's PackedWeights hold none: sgemm reads a
/// weight it must transpose at ~122 GFLOP/s for LSTM's
/// [64, 512]·[2048, 512]ᵀ, oneDNN's matmul its packed copy at ~160, and
/// the packing (one pass over the weight) pays for itself within a few
/// steps. 1-thread training, T=50 B=64: LSTM 304-322 → 293-305 ms; GRU,
/// LAU and ATR level (bench/README.md). In bf16 the backward's products by
/// the same weights (a step's state gradient) are packed for their
/// direction too, which saves rounding the weight at every step (LSTM
/// training T=50 B=64, 1 thread: 590 → 559 ms); in f32 sgemm's 'N', 'N'
/// product was as fast as the packed one or faster (LSTM 315-320 against
/// 321-329 ms). Results then differ in the last bits from a call of fewer
/// steps or rows (the sums add in another order).
void Execution::packStepProducts() {
  constexpr int64_t kMinSteps = 16, kMinRows = 4, kMaxRows = 256;
  if (!shared || !dynamic_cast<HostDevice *>(&device) ||
      maxLength < kMinSteps || rowsPerStep < kMinRows || rowsPerStep > kMaxRows)
    return;
  for (BoundOperation &bound : stepOperations) {
    if (bound.op->kind != Operation::Kind::Gemm || bound.packedProduct ||
        (isBackward(bound.op->phase) && device.precision() == Precision::F32))
      continue;
    std::string error;
    std::unique_ptr<PackedProduct> packed = PackedProduct::pack(
        bound.weight, bound.weightRows, bound.weightCols, error,
        device.precision(),
        isBackward(bound.op->phase) ? PackedProduct::Use::Backward
                                    : PackedProduct::Use::Forward);
    // Without it the product runs on sgemm as before.
    if (!packed)
      continue;
    callProducts.push_back(std::move(packed));
    bound.packedProduct = callProducts.back().get();
  }
}

Status Execution::forward() {
  Status status = setUp();
  if (!status.ok())
    return status;
  // Bound by an earlier call for the same key: only the weights change.
  BindingKey key = bindingKey();
  if (work.boundFor && *work.boundFor == key) {
    refreshWeights();
  } else {
    work.boundFor.reset();
    work.scratch.rewind();
    if (!(status = bindOperations(/*backwardPhases=*/false, work.scratch)).ok())
      return status;
    work.schedule = pickSchedule();
    work.tiledForward.reset();
    work.tiledRun.reset();
    work.boundFor = std::move(key);
    ++bindings;
  }
  switch (work.schedule) {
  case ScheduleKind::Scan:
    return ScanSchedule(*this).forward();
  case ScheduleKind::Tiled:
    return TiledSchedule(*this).forward();
  case ScheduleKind::Steps:
    break;
  }
  return StepSchedule(*this).forward();
}

/// A scan replaces the steps; the tiles need the CPU's kernels and
/// libxsmm (each call then decides whether they pay).
ScheduleKind Execution::pickSchedule() const {
  if (!scanOperations.empty())
    return ScheduleKind::Scan;
  if (dynamic_cast<HostDevice *>(&device) && tiledStepsAvailable())
    return ScheduleKind::Tiled;
  return ScheduleKind::Steps;
}

} // namespace cellrt::detail
