//===- Executor.cpp - Run a plan over a padded batch ----------------------===//
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

#include "DimBinder.h"
#include "HostDevice.h"
#include "PlanLayout.h"
#include "TiledSteps.h"
#include "cellrt/Device.h"
#include "cellrt/Runtime.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>

using namespace cellrt;

/// The device's copies of a cell's params (those the caller gave to
/// packWeights) and of its stacked weights; released with the last
/// PackedWeights that holds them.
struct cellrt::DeviceWeights {
  std::shared_ptr<Device> owner;
  std::map<std::string, float *> params;
  std::vector<const float *> weights;
  std::vector<void *> allocations;

  float *find(const std::string &name) const {
    auto it = params.find(name);
    return it == params.end() ? nullptr : it->second;
  }
  /// A device copy of `count` floats at `host`; null when out of memory.
  float *place(const float *host, int64_t count) {
    void *memory = owner->allocate(size_t(count) * sizeof(float));
    if (!memory)
      return nullptr;
    allocations.push_back(memory);
    owner->upload(memory, host, size_t(count) * sizeof(float));
    return static_cast<float *>(memory);
  }
  ~DeviceWeights() {
    for (void *memory : allocations)
      owner->release(memory);
  }
};

using cellrt::detail::DimBinder;
using cellrt::detail::Sizes;
using cellrt::detail::ShapeConstraint;
using cellrt::detail::checkConstraint;
using cellrt::detail::HostDevice;
using cellrt::detail::OperandLayout;
using cellrt::detail::OperationLayout;
using cellrt::detail::PlanLayout;
using cellrt::detail::TiledArg;
using cellrt::detail::TiledPhase;
using cellrt::detail::TiledSteps;
using cellrt::detail::runTiledSteps;
using cellrt::detail::tiledBlock;
using cellrt::detail::tiledStepsWanted;

static std::string quote(const std::string &text) { return "'" + text + "'"; }

static std::string planError(const Operation &op, const std::string &message) {
  return "plan line " + std::to_string(op.line) + ": " + message;
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

Expected<Cell> Cell::load(const cellrt_image &image) {
  if (!image.plan)
    return Status::error("cellrt_image has no plan");
  Expected<Plan> plan = parsePlan(image.plan);
  if (!plan)
    return plan.getStatus();
  int64_t needed = plan->numKernelsUsed();
  if (image.num_kernels < needed)
    return Status::error("plan of cell " + quote(plan->cellName) +
                         " uses kernel " + std::to_string(needed - 1) +
                         " but the image has only " +
                         std::to_string(image.num_kernels) + " kernels");
  if (image.num_kernels > 0 && !image.kernels)
    return Status::error("cellrt_image has no kernel table");
  std::vector<cellrt_kernel_fn> kernels;
  std::vector<std::string> names;
  for (int64_t i = 0; i < image.num_kernels; ++i) {
    if (!image.kernels[i])
      return Status::error("kernel " + std::to_string(i) + " of cell " +
                           quote(plan->cellName) + " is null");
    kernels.push_back(image.kernels[i]);
    const char *name = image.kernel_names ? image.kernel_names[i] : nullptr;
    names.push_back(name ? name : "");
  }
  return create(std::move(*plan),
                std::make_shared<detail::HostDevice>(std::move(kernels)),
                std::move(names));
}

Expected<Cell> Cell::create(Plan plan, std::shared_ptr<Device> device,
                            std::vector<std::string> kernelNames) {
  if (!device)
    return Status::error("Cell::create: no device");
  if (device->numKernels() < plan.numKernelsUsed())
    return Status::error("plan of cell " + quote(plan.cellName) +
                         " uses kernel " +
                         std::to_string(plan.numKernelsUsed() - 1) +
                         " but the device has only " +
                         std::to_string(device->numKernels()) + " kernels");
  Cell cell;
  cell.plan = std::move(plan);
  cell.device = std::move(device);
  cell.kernelNames = std::move(kernelNames);
  cell.kernelNames.resize(cell.device->numKernels());
  cell.workspaces = std::make_shared<detail::WorkspacePool>();
  return cell;
}

Expected<std::vector<int64_t>> Cell::bindDims(const ForwardArgs &args) const {
  Expected<Sizes> sizes = DimBinder(plan, args).bind();
  if (!sizes)
    return sizes.getStatus();
  std::vector<int64_t> values;
  for (const std::string &dim : plan.dims)
    values.push_back(sizes->dims.at(dim));
  return values;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

namespace {

/// Where an operand's rows live: `base` (already at its column offset) plus
/// `stepAdvance` floats per step or, when `slot` is set, `*slot + column`
/// (one half of a double-buffered array whose halves swap every step).
struct Operand {
  float *const *slot = nullptr;
  float *base = nullptr;
  int64_t column = 0;
  int64_t stride = 0;
  int64_t stepAdvance = 0;

  float *at(int64_t step) const {
    return (slot ? *slot + column : base) + step * stepAdvance;
  }
};

/// One stacked part of a `wgrad`: its rows in the stacked weight and the
/// gradient array (on the device) it accumulates into.
struct GradientPart {
  float *gradient;
  int64_t rowOffset, rows;
};

/// An operation with its operands resolved for this call.
struct BoundOperation {
  const Operation *op = nullptr;
  std::vector<Operand> operands;
  /// Kernels on devices that pass row-local scratch: [rows, LEN] each.
  std::vector<std::pair<float *, int64_t>> scratch;
  /// Kernels on devices that provide scratch per thread: each LEN.
  std::vector<int64_t> scratchLengths;
  /// Gemm, Wgrad: the stacked weight and its shape.
  const float *weight = nullptr;
  int64_t weightRows = 0, weightCols = 0;
  /// Forward gemm: the weight transposed ([cols, rows]), where the
  /// caller's PackedWeights hold it.
  const float *transposedWeight = nullptr;
  /// Wgrad: the wanted parts. Pgrad: the gradient (null: unwanted).
  std::vector<GradientPart> parts;
  float *gradient = nullptr;
  int64_t length = 0;

  /// Empty again, keeping the vectors' memory.
  void reset() {
    op = nullptr;
    operands.clear();
    scratch.clear();
    scratchLengths.clear();
    weight = nullptr;
    weightRows = weightCols = 0;
    transposedWeight = nullptr;
    parts.clear();
    gradient = nullptr;
    length = 0;
  }
};

/// Bound operations of one phase group, kept across calls: clear() forgets
/// them but keeps each one's vectors, so binding the same plan again (every
/// call of a decoding loop) allocates nothing.
class BoundList {
public:
  void clear() { count = 0; }
  /// A reset operation at the end of the list.
  BoundOperation &append() {
    if (count == items.size())
      items.emplace_back();
    BoundOperation &bound = items[count++];
    bound.reset();
    return bound;
  }
  const BoundOperation *begin() const { return items.data(); }
  const BoundOperation *end() const { return items.data() + count; }
  bool empty() const { return count == 0; }

private:
  std::vector<BoundOperation> items;
  size_t count = 0;
};

/// What a call binds, kept in its workspace so that the next call with the
/// same plan reuses the memory.
struct BoundProgram {
  BoundList sequence, steps, end, scan;
  /// One kernel launch's pointers and strides.
  std::vector<float *> kernelPointers;
  std::vector<int64_t> kernelStrides;
};

/// Device memory kept across calls: a call with the same plan and sizes asks
/// for the same blocks in the same order, so it allocates (and page-faults)
/// nothing. Blocks are not zeroed: every buffer is written before it is
/// read, or zeroed explicitly where a sum starts.
class Blocks {
public:
  Blocks() = default;
  Blocks(const Blocks &) = delete;
  Blocks &operator=(const Blocks &) = delete;
  ~Blocks() { releaseAll(); }

  /// Blocks of another device are released first.
  void use(const std::shared_ptr<Device> &wanted) {
    if (device == wanted)
      return;
    releaseAll();
    device = wanted;
  }

  void *allocateBytes(size_t bytes) {
    bytes = std::max<size_t>(bytes, 4);
    if (used == blocks.size()) {
      blocks.push_back(nullptr);
      capacities.push_back(0);
    }
    if (capacities[used] < bytes) {
      if (blocks[used])
        device->release(blocks[used]);
      blocks[used] = device->allocate(bytes);
      capacities[used] = blocks[used] ? bytes : 0;
      if (!blocks[used] && !failedBytes)
        failedBytes = bytes;
    }
    return blocks[used++];
  }
  float *allocate(int64_t count) {
    return static_cast<float *>(
        allocateBytes(static_cast<size_t>(std::max<int64_t>(count, 1)) * 4));
  }
  /// Forgets the previous call's layout, keeping the blocks.
  void rewind() {
    used = 0;
    failedBytes = 0;
  }
  /// The first allocation that failed since rewind(), as an error.
  Status status() const {
    if (!failedBytes)
      return Status::success();
    return Status::error("out of device memory: cannot allocate " +
                         std::to_string(failedBytes) + " bytes");
  }

private:
  void releaseAll() {
    for (void *block : blocks)
      if (block)
        device->release(block);
    blocks.clear();
    capacities.clear();
    used = 0;
  }

  std::shared_ptr<Device> device;
  std::vector<void *> blocks;
  std::vector<size_t> capacities;
  size_t used = 0;
  size_t failedBytes = 0;
};

/// The arrays of one forward call, all device addresses; a training-mode
/// forward keeps them in the tape for backward().
struct Workspace {
  Blocks blocks;
  BoundProgram bound;

  void reset() {
    blocks.rewind();
    inputs.clear();
    buffers.clear();
    currentStates.clear();
    nextStates.clear();
    weights.clear();
    params.clear();
    outputBase = nullptr;
    outputStepAdvance = 0;
    lengths = nullptr;
    dims = nullptr;
  }

  /// [T*B, LEN] per input: the caller's array, a copy reversed within
  /// lengths, or the device's copy.
  std::vector<float *> inputs;
  /// Step buffers are [B, LEN], or [T*B, LEN] in training mode.
  std::vector<float *> buffers;
  /// Inference: the current and next value of each state, swapped after
  /// every step. Training: currentStates[i] is the history [(T+1)*B, LEN]
  /// (block t = the state before step t) and nextStates is unused.
  std::vector<float *> currentStates, nextStates;
  std::vector<const float *> weights;
  /// Every param, in the plan's order: the caller's array or the device's
  /// copy.
  std::vector<float *> params;
  float *outputBase = nullptr;
  int64_t outputStepAdvance = 0;
  /// The kernels' lengths and dims arrays.
  const int32_t *lengths = nullptr;
  const int64_t *dims = nullptr;
};

/// A caller's array and the device copy the call writes; copied back at the
/// end of the call.
struct WriteBack {
  float *host;
  const float *device;
  int64_t count;
};

/// The gradient arrays of one backward call.
struct GradientSpace {
  /// [B, LEN] per state, swapped after every step.
  std::vector<float *> dnext, dstate;
  float *dout = nullptr;
  int64_t doutStepAdvance = 0;
  /// [T*B, LEN] per input: the caller's gradient or scratch; null when no
  /// operation references it.
  std::vector<float *> dinputs;
  /// True where dinputs[i] is scratch that must be added to the caller's
  /// array (reversed within lengths in reverse mode).
  std::vector<bool> dinputScratch;
  /// Per state: where the caller's initial-state gradient is accumulated.
  std::vector<float *> initialTargets;
  /// Per param: where its gradient is accumulated (null: unwanted).
  std::map<std::string, float *> params;
  std::vector<WriteBack> writeBacks;
};

} // namespace

/// Workspaces of inference calls, kept between calls: a call takes one (or
/// a new one when all are in use by other threads) and gives it back. Also
/// the sizes of the Cell's last call's shapes.
class cellrt::detail::WorkspacePool {
public:
  SizesCache sizes;

  std::unique_ptr<Workspace> take() {
    std::lock_guard<std::mutex> lock(mutex);
    if (spare.empty())
      return std::make_unique<Workspace>();
    std::unique_ptr<Workspace> work = std::move(spare.back());
    spare.pop_back();
    return work;
  }
  void give(std::unique_ptr<Workspace> work) {
    std::lock_guard<std::mutex> lock(mutex);
    spare.push_back(std::move(work));
  }

private:
  std::mutex mutex;
  std::vector<std::unique_ptr<Workspace>> spare;
};

struct cellrt::Tape::Storage {
  bool recorded = false;
  /// The plan that recorded it (a Cell's plan lives as long as the Cell).
  const Plan *plan = nullptr;
  int64_t steps = 0, batch = 0;
  std::map<std::string, int64_t> dims;
  std::vector<int32_t> lengths;
  bool reverse = false;
  Workspace workspace;
  /// backward()'s own arrays, reused from call to call.
  Blocks gradientBlocks;
};

Tape::Tape() = default;
Tape::~Tape() = default;
Tape::Tape(Tape &&) noexcept = default;
Tape &Tape::operator=(Tape &&) noexcept = default;
bool Tape::isRecorded() const { return storage && storage->recorded; }

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

namespace {

/// Runs the forward or backward operations of one call on a device.
class Execution {
public:
  Execution(const Plan &plan, Device &device, const ForwardArgs &args,
            const Sizes &sizes, Workspace &work, bool training)
      : plan(plan), device(device), shared(device.sharesHostMemory()),
        args(args), sizes(sizes), work(work), training(training),
        rowsPerStep(sizes.batch),
        maxLength(*std::max_element(args.lengths, args.lengths + sizes.batch)),
        layout(*sizes.layout), dimValues(layout.dimValues) {}

  /// Fills `work` and runs the pre and step operations.
  Status forward();
  /// Runs the backward operations over the arrays a training-mode forward
  /// left in `work`, with its own arrays in `gradientBlocks`.
  Status backward(const BackwardArgs &gradients, Blocks &gradientBlocks);

private:
  Status setUp();
  void stackWeights();
  void refreshCallerPointers();
  Status bindOperations(bool backwardPhases, Blocks &scratchBlocks);
  Expected<Operand> bindOperand(const Operation &op, const Ref &ref,
                                const OperandLayout &at);
  Status checkColumns(const Operation &op, const Ref &ref,
                      const OperandLayout &at, int64_t columns,
                      const char *role) const;
  Status bindGradients(BoundOperation &bound, const OperationLayout &at);
  Status setUpGradients(const BackwardArgs &gradients, Blocks &blocks);
  void zeroGradientBuffers();
  Status runOperation(const BoundOperation &bound, int64_t step,
                      int64_t rowBegin, int64_t rowEnd);
  Status runScan(const BoundOperation &bound);
  Status runBackwardSteps();
  bool describeTiledSteps(TiledSteps &tiled, bool backwardPass) const;
  bool eachSegmentIsAnArgument(const std::string &hidden) const;
  bool describeTiledProduct(const BoundOperation &bound, bool backwardPass,
                            std::map<std::string, int64_t> &productPhase,
                            const TiledSteps &tiled, TiledPhase &phase) const;
  bool tiledRows(const Ref &ref, const Operand &operand,
                 const std::map<std::string, int64_t> &productPhase,
                 TiledArg &arg) const;
  bool describeTiledKernel(const BoundOperation &bound, const HostDevice &host,
                           const std::map<std::string, int64_t> &productPhase,
                           const TiledSteps &tiled, TiledPhase &phase) const;
  bool describeTiledArg(const Ref &ref, const Operand &operand,
                        const std::map<std::string, int64_t> &productPhase,
                        TiledArg &arg) const;
  Status finish();
  Status finishBackward(const BackwardArgs &gradients);
  int64_t width(const VectorDecl &decl) const {
    return sizes.eval(decl.length);
  }
  /// Packed weights stand in for stacking the caller's params: on inference
  /// calls only (training keeps its own copies: the tape may outlive the
  /// caller's), as host arrays where memory is shared, else as the
  /// device's copies.
  bool usesPackedWeights() const {
    return args.packedWeights && !training &&
           (shared || args.packedWeights->onDevice());
  }
  const DeviceWeights *residentWeights() const {
    return usesPackedWeights() && !shared ? args.packedWeights->onDevice()
                                          : nullptr;
  }
  int64_t paramCount(const std::string &name) const {
    return layout.paramCounts[plan.findParam(name) - plan.params.data()];
  }
  /// A caller's host array as the device sees it: itself when memory is
  /// shared, else a copy in `blocks` (filled once the call's allocations
  /// have succeeded, by uploadPending()).
  float *mirror(const float *host, int64_t count, Blocks &blocks);
  /// Like mirror, and the copy is written back to `host` when the call ends.
  float *mirrorBack(float *host, int64_t count, Blocks &blocks);
  void uploadPending();
  /// Device rows [T, B, width] from host rows reversed within lengths.
  void importReversed(const float *host, float *target, int64_t width);
  /// Host rows from device rows [T, B, width], reversed within lengths.
  void exportReversed(const float *source, float *host, int64_t width);
  /// Whether the caller reads the `out` rows: the output or a probe.
  bool readsOutRows() const;
  /// Splits the kernels' `out` rows into the output and the probe arrays.
  void exportOutputAndProbes();
  /// The output gradient as [T, B, outputWidth] host rows (zeros for the
  /// probes' columns): the caller's own array when the cell has no probes.
  const float *widenOutputGradient(const float *dOutput);

  const Plan &plan;
  Device &device;
  const bool shared;
  const ForwardArgs &args;
  const Sizes &sizes;
  Workspace &work;
  const bool training;
  const int64_t rowsPerStep;
  /// Steps at or past the longest sequence would only carry states.
  const int64_t maxLength;
  /// The plan evaluated for these sizes (DimBinder made it with them).
  const PlanLayout &layout;
  const std::vector<int64_t> &dimValues;
  /// The width of the kernels' `out` rows: the output, then the probes.
  int64_t outputWidth = 0;
  /// Backward with probes: the caller's output gradient widened to the
  /// kernels' rows (zero for the probes); it must outlive the call.
  std::vector<float> widenedDout;

  const BackwardArgs *gradientArgs = nullptr;
  GradientSpace grads;
  /// Uploads waiting for the call's allocations to succeed.
  std::vector<WriteBack> pendingUploads;

  /// The bound operations by phase group, in `work` (see BoundProgram).
  BoundList &sequenceOperations = work.bound.sequence;
  BoundList &stepOperations = work.bound.steps;
  BoundList &endOperations = work.bound.end;
  BoundList &scanOperations = work.bound.scan;
  std::vector<float *> &kernelPointers = work.bound.kernelPointers;
  std::vector<int64_t> &kernelStrides = work.bound.kernelStrides;
};

} // namespace

float *Execution::mirror(const float *host, int64_t count, Blocks &blocks) {
  // Kernels take non-const pointers but never write their inputs.
  if (shared || !host)
    return const_cast<float *>(host);
  float *copy = blocks.allocate(count);
  pendingUploads.push_back({const_cast<float *>(host), copy, count});
  return copy;
}

float *Execution::mirrorBack(float *host, int64_t count, Blocks &blocks) {
  float *copy = mirror(host, count, blocks);
  if (copy != host)
    grads.writeBacks.push_back({host, copy, count});
  return copy;
}

void Execution::uploadPending() {
  for (const WriteBack &upload : pendingUploads)
    device.upload(const_cast<float *>(upload.device), upload.host,
                  upload.count * sizeof(float));
  pendingUploads.clear();
}

void Execution::importReversed(const float *host, float *target,
                               int64_t width) {
  if (shared) {
    reverseWithinLengths(host, target, sizes.steps, sizes.batch, width,
                         args.lengths);
    return;
  }
  std::vector<float> reversed(sizes.steps * sizes.batch * width);
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
    exportReversed(work.outputBase, outRows.data(), outputWidth);
  else
    device.download(outRows.data(), work.outputBase,
                    outRows.size() * sizeof(float));
  auto exportColumns = [&](float *target, int64_t column, int64_t count) {
    for (int64_t row = 0; row < rows; ++row)
      std::copy_n(outRows.data() + row * outputWidth + column, count,
                  target + row * count);
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
  widenedDout.assign(rows * outputWidth, 0.0f);
  for (int64_t row = 0; row < rows; ++row)
    std::copy_n(dOutput + row * own, own, widenedDout.data() + row * outputWidth);
  return widenedDout.data();
}

void Execution::exportReversed(const float *source, float *host,
                               int64_t width) {
  if (shared) {
    reverseWithinLengths(source, host, sizes.steps, sizes.batch, width,
                         args.lengths);
    return;
  }
  std::vector<float> rows(sizes.steps * sizes.batch * width);
  device.download(rows.data(), source, rows.size() * sizeof(float));
  reverseWithinLengths(rows.data(), host, sizes.steps, sizes.batch, width,
                       args.lengths);
}

Status Execution::setUp() {
  int64_t steps = sizes.steps, batch = sizes.batch;
  Blocks &blocks = work.blocks;
  work.reset();
  // Allocate everything first: nothing is written unless all of it fits.
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    int64_t rows =
        plan.buffers[i].extent == BufferDecl::Extent::Sequence || training
            ? steps * batch
            : batch;
    work.buffers.push_back(blocks.allocate(rows * layout.bufferLengths[i]));
  }
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t count = batch * layout.stateWidths[i];
    work.currentStates.push_back(
        blocks.allocate(training ? (steps + 1) * count : count));
    work.nextStates.push_back(training ? nullptr : blocks.allocate(count));
  }
  outputWidth = layout.kernelOutputWidth;
  if (!readsOutRows()) {
    // Nobody reads the output: one step's worth of scratch is enough.
    work.outputBase = blocks.allocate(batch * outputWidth);
  } else if (args.reverse || !shared || !plan.probes.empty()) {
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
    if (args.reverse)
      work.inputs.push_back(reversedInputs[i] = blocks.allocate(count));
    else
      work.inputs.push_back(mirror(args.inputs[i].data, count, blocks));
  }
  const DeviceWeights *resident = residentWeights();
  for (size_t i = 0; i < plan.params.size(); ++i) {
    const std::string &name = plan.params[i].name;
    float *onDevice = resident ? resident->find(name) : nullptr;
    work.params.push_back(onDevice ? onDevice
                                   : mirror(args.params.at(name).data,
                                            layout.paramCounts[i], blocks));
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
      importReversed(args.inputs[i].data, reversedInputs[i],
                     width(plan.inputs[i]));
  // Training: steps no sequence reaches are never run, but weight gradients
  // read every row; keep those rows finite.
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (training && plan.buffers[i].extent == BufferDecl::Extent::Step) {
      int64_t length = sizes.eval(plan.buffers[i].length);
      device.zero(work.buffers[i] + maxLength * batch * length,
                  (steps - maxLength) * batch * length);
    }
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t count = batch * width(plan.states[i]);
    if (i < args.initialStates.size() && args.initialStates[i].data)
      device.upload(work.currentStates[i], args.initialStates[i].data,
                    count * sizeof(float));
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
      device.upload(row, args.params.at(plan.params[param].name).data,
                    count * sizeof(float));
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
  for (size_t w = 0; w < plan.weights.size(); ++w) {
    if (layout.weightParams[w].size() == 1) {
      work.weights.push_back(work.params[layout.weightParams[w][0]]);
      continue;
    }
    work.weights.push_back(
        work.blocks.allocate(layout.weightRows[w] * layout.weightCols[w]));
  }
}

/// backward() may get the same values at other addresses than forward did:
/// point the workspace at the caller's arrays again. (A device with its own
/// memory keeps the copies forward made.)
void Execution::refreshCallerPointers() {
  if (!shared)
    return;
  work.lengths = args.lengths;
  work.dims = dimValues.data();
  if (!args.reverse)
    for (size_t i = 0; i < plan.inputs.size(); ++i)
      work.inputs[i] = const_cast<float *>(args.inputs[i].data);
  for (size_t i = 0; i < plan.params.size(); ++i)
    work.params[i] = const_cast<float *>(args.params.at(plan.params[i].name).data);
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
    operand.base = work.inputs[at.index];
    operand.stepAdvance = stepFloats;
    break;
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
    operand.base = work.params[at.index];
    // A vector param is broadcast to every row.
    operand.stride = plan.params[at.index].isMatrix() ? arrayWidth : 0;
    break;
  }
  case Ref::Kind::Out:
    operand.base = work.outputBase;
    operand.stepAdvance = work.outputStepAdvance;
    break;
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
    BoundOperation &bound = listFor(op.phase, work.bound).append();
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
      bound.weight = work.weights[at.weight];
      bound.weightRows = layout.weightRows[at.weight];
      bound.weightCols = layout.weightCols[at.weight];
      if (usesPackedWeights() && shared && !isBackward(op.phase))
        bound.transposedWeight = args.packedWeights->transposed(at.weight);
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

Status Execution::runOperation(const BoundOperation &bound, int64_t step,
                               int64_t rowBegin, int64_t rowEnd) {
  const Operation &op = *bound.op;
  switch (op.kind) {
  case Operation::Kind::Gemm: {
    const Operand &out = bound.operands[0], &in = bound.operands[1];
    const float *inRows = in.at(step) + rowBegin * in.stride;
    float *outRows = out.at(step) + rowBegin * out.stride;
    if (isBackward(op.phase))
      return device.gemmAccumulate(rowEnd - rowBegin, bound.weightCols,
                                   bound.weightRows, inRows, in.stride,
                                   bound.weight, bound.weightCols, outRows,
                                   out.stride);
    // oneDNN multiplies up to 3 rows by a weight read transposed as fast as
    // by one kept transposed (a matrix-vector product); from 4 rows on it
    // packs the weight first (4 rows by LSTM's [2048, 512]: 303 µs against
    // 174, 10 rows 582 against 256).
    constexpr int64_t kMinRowsForTransposed = 4;
    if (bound.transposedWeight && rowEnd - rowBegin >= kMinRowsForTransposed)
      return device.gemm(rowEnd - rowBegin, bound.weightRows, bound.weightCols,
                         inRows, in.stride, bound.transposedWeight,
                         bound.weightRows, outRows, out.stride);
    return device.gemmTransposedWeight(
        rowEnd - rowBegin, bound.weightRows, bound.weightCols, inRows,
        in.stride, bound.weight, bound.weightCols, outRows, out.stride);
  }
  case Operation::Kind::Wgrad: {
    const Operand &dy = bound.operands[0], &x = bound.operands[1];
    for (const GradientPart &part : bound.parts) {
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
      exportReversed(work.outputBase, args.output.data, outputWidth);
    else
      device.download(args.output.data, work.outputBase,
                      sizes.steps * stepFloats * sizeof(float));
  }
  for (size_t i = 0; i < plan.states.size(); ++i) {
    int64_t count = batch * width(plan.states[i]);
    const float *last = work.currentStates[i];
    if (training) {
      // The skipped steps carry the state: keep the history complete.
      float *history = work.currentStates[i];
      last = history + maxLength * count;
      for (int64_t t = maxLength + 1; t <= sizes.steps; ++t)
        device.copy(history + t * count, last, count * sizeof(float));
    }
    if (i < args.finalStates.size() && args.finalStates[i].data)
      device.download(args.finalStates[i].data, last, count * sizeof(float));
  }
  return device.synchronize();
}

Status Execution::forward() {
  Status status = setUp();
  if (!status.ok())
    return status;
  if (!(status = bindOperations(/*backwardPhases=*/false, work.blocks)).ok())
    return status;

  int64_t allRows = sizes.steps * sizes.batch;
  for (const BoundOperation &bound : sequenceOperations)
    if (!(status = runOperation(bound, 0, 0, allRows)).ok())
      return status;
  if (!scanOperations.empty()) {
    for (const BoundOperation &bound : scanOperations)
      if (!(status = runScan(bound)).ok())
        return status;
    // Inference: the scan wrote the final states into the next buffers.
    if (!training)
      for (size_t i = 0; i < plan.states.size(); ++i)
        std::swap(work.currentStates[i], work.nextStates[i]);
    return finish();
  }
  // The tiled steps fail only before they start (no micro-kernel for the
  // shape); the default schedule then runs.
  if (TiledSteps tiled; describeTiledSteps(tiled, /*backwardPass=*/false) &&
                        runTiledSteps(tiled).ok()) {
    // Inference states are double buffers that swapped every step.
    if (!training && maxLength % 2)
      for (size_t i = 0; i < plan.states.size(); ++i)
        std::swap(work.currentStates[i], work.nextStates[i]);
    return finish();
  }
  for (int64_t step = 0; step < maxLength; ++step) {
    for (const BoundOperation &bound : stepOperations)
      if (!(status = runOperation(bound, step, 0, rowsPerStep)).ok())
        return status;
    if (!training)
      for (size_t i = 0; i < plan.states.size(); ++i)
        std::swap(work.currentStates[i], work.nextStates[i]);
  }
  return finish();
}

/// Whether this call's steps can run as tiles (TiledSteps.h): on the CPU,
/// steps of products and kernels without whole-row scratch; each product
/// reads [B, H] rows of a state or of a buffer an earlier kernel wrote by a
/// stacked [G*H, H] weight (backward: [B, rows] by [rows, H] into a state
/// gradient or a buffer), and every kernel argument is H wide per row (a
/// state, a gradient, a param, the output, an input) or one H-wide gate of
/// a stacked buffer.
/// n where `expr` is written n * `dim` (n >= 0), else -1. The tiled steps
/// move arrays by the hidden dim as the plan writes it: an array whose width
/// is another dim that happens to be as large is not split.
static int64_t multipleOf(const DimExpr &expr, const std::string &dim) {
  const std::vector<DimExpr::Term> &terms = expr.getTerms();
  if (expr.getConstant() != 0 || terms.size() > 1)
    return -1;
  if (terms.empty())
    return 0;
  return terms[0].first == dim && terms[0].second > 0 ? terms[0].second : -1;
}

bool Execution::describeTiledSteps(TiledSteps &tiled, bool backwardPass) const {
  auto *host = dynamic_cast<HostDevice *>(&device);
  // The weights are packed per call: a decoding step would pay a pass over
  // them for one product.
  constexpr int64_t kMinTiledSteps = 3;
  if (!host || !tiledStepsWanted(training) || maxLength < kMinTiledSteps ||
      plan.states.empty() ||
      std::none_of(stepOperations.begin(), stepOperations.end(),
                   [](const BoundOperation &bound) {
                     return bound.op->kind == Operation::Kind::Gemm;
                   }))
    return false;
  // The hidden dim: the first state's length, one symbol of the dims, and
  // every state as wide.
  const DimExpr &length = plan.states[0].length;
  if (length.getTerms().size() != 1)
    return false;
  tiled.hiddenDim = length.getTerms()[0].first;
  for (const VectorDecl &state : plan.states)
    if (multipleOf(state.length, tiled.hiddenDim) != 1)
      return false;
  tiled.hidden = sizes.eval(length);
  tiled.block = tiledBlock(tiled.hidden);
  if (!tiled.block || !eachSegmentIsAnArgument(tiled.hiddenDim))
    return false;
  std::map<std::string, int64_t> productPhase;
  for (const BoundOperation &bound : stepOperations) {
    TiledPhase phase;
    bool described =
        bound.op->kind == Operation::Kind::Gemm
            ? describeTiledProduct(bound, backwardPass, productPhase, tiled,
                                   phase)
            : describeTiledKernel(bound, *host, productPhase, tiled, phase);
    if (!described)
      return false;
    tiled.phases.push_back(std::move(phase));
  }
  for (size_t i = 0; i < plan.dims.size(); ++i)
    tiled.dims.push_back(plan.dims[i] == tiled.hiddenDim ? tiled.block
                                                          : dimValues[i]);
  tiled.lengths = work.lengths;
  tiled.steps = maxLength;
  tiled.batch = rowsPerStep;
  tiled.reverse = backwardPass;
  tiled.zeroOutgoing = backwardPass;
  tiled.slots[0] = work.currentStates;
  tiled.slots[1] = work.nextStates;
  tiled.slots[2] = grads.dnext;
  tiled.slots[3] = grads.dstate;
  return true;
}

/// Every H-wide segment of a buffer a step kernel reads must be an argument
/// of its own: a value two segments wide is passed once and spans two gates.
bool Execution::eachSegmentIsAnArgument(const std::string &hidden) const {
  std::map<std::string, std::set<int64_t>> segments;
  for (const BoundOperation &bound : stepOperations)
    if (bound.op->kind == Operation::Kind::Kernel)
      for (const Ref &ref : bound.op->operands)
        if (ref.kind == Ref::Kind::Seq || ref.kind == Ref::Kind::Step) {
          int64_t segment = multipleOf(ref.column, hidden);
          if (segment < 0)
            return false;
          segments[ref.name].insert(segment);
        }
  for (const auto &[name, used] : segments)
    if (int64_t(used.size()) !=
        multipleOf(plan.findBuffer(name)->length, hidden))
      return false;
  return true;
}

/// A forward product (into the member's tile in inference, into its
/// buffer where backward reads it) or a backward accumulation, by a weight
/// of [k*H, H] params.
bool Execution::describeTiledProduct(
    const BoundOperation &bound, bool backwardPass,
    std::map<std::string, int64_t> &productPhase, const TiledSteps &tiled,
    TiledPhase &phase) const {
  const std::string &hidden = tiled.hiddenDim;
  int64_t gates = 0;
  for (const std::string &name : plan.findWeight(bound.op->weight)->params) {
    const ParamDecl *param = plan.findParam(name);
    int64_t rows = multipleOf(param->shape[0], hidden);
    if (rows < 1 || multipleOf(param->shape[1], hidden) != 1)
      return false;
    gates += rows;
  }
  const Ref &in = bound.op->gemmInput(), &out = bound.op->gemmOutput();
  phase.weight = bound.weight;
  phase.weightRows = bound.weightRows;
  phase.gates = gates;
  if (multipleOf(in.column, hidden) != 0 ||
      multipleOf(out.column, hidden) != 0 ||
      !tiledRows(in, bound.operands[1], productPhase, phase.in) ||
      !tiledRows(out, bound.operands[0], productPhase, phase.out))
    return false;
  int64_t inWidth = multipleOf(plan.arrayWidth(in), hidden);
  int64_t outWidth = multipleOf(plan.arrayWidth(out), hidden);
  if (backwardPass) {
    // out (H wide) += in ([B, k*H]) · W.
    phase.kind = TiledPhase::Kind::Accumulate;
    return outWidth == 1 && inWidth == gates;
  }
  phase.kind = TiledPhase::Kind::Product;
  if (inWidth != 1 || out.kind != Ref::Kind::Step || outWidth != gates)
    return false;
  // Inference keeps the products in the members' caches; training keeps
  // every step's for backward.
  phase.intoTile = !training;
  if (phase.intoTile)
    productPhase[out.name] = int64_t(tiled.phases.size());
  return true;
}

/// A product's operand as whole rows: a state or state gradient (double
/// buffered in inference and backward, a history in training) or a buffer;
/// never an inference product tile, which exists per block only.
bool Execution::tiledRows(const Ref &ref, const Operand &operand,
                          const std::map<std::string, int64_t> &productPhase,
                          TiledArg &arg) const {
  if (ref.kind == Ref::Kind::Step && productPhase.count(ref.name))
    return false;
  return describeTiledArg(ref, operand, productPhase, arg) &&
         arg.kind != TiledArg::Kind::Product;
}

bool Execution::describeTiledKernel(
    const BoundOperation &bound, const HostDevice &host,
    const std::map<std::string, int64_t> &productPhase,
    const TiledSteps &tiled, TiledPhase &phase) const {
  if (!bound.scratch.empty() || plan.scratch.count(bound.op->kernel))
    return false;
  phase.kind = TiledPhase::Kind::Kernel;
  phase.kernel = host.kernel(bound.op->kernel);
  for (size_t i = 0; i < bound.operands.size(); ++i) {
    const Ref &ref = bound.op->operands[i];
    bool stacked = ref.kind == Ref::Kind::Seq || ref.kind == Ref::Kind::Step;
    // Stacked buffers' gates are checked by eachSegmentIsAnArgument.
    if (!stacked && multipleOf(plan.arrayWidth(ref), tiled.hiddenDim) != 1)
      return false;
    TiledArg arg;
    if (!describeTiledArg(ref, bound.operands[i], productPhase, arg))
      return false;
    phase.args.push_back(arg);
  }
  return true;
}

bool Execution::describeTiledArg(
    const Ref &ref, const Operand &operand,
    const std::map<std::string, int64_t> &productPhase, TiledArg &arg) const {
  arg.stride = operand.stride;
  if (ref.kind == Ref::Kind::Step) {
    if (auto phase = productPhase.find(ref.name); phase != productPhase.end()) {
      arg.kind = TiledArg::Kind::Product;
      arg.phase = phase->second;
      arg.index = sizes.eval(ref.column) / width(plan.states[0]);
      return true;
    }
  }
  if (ref.kind == Ref::Kind::Dinput)
    return false;
  if (operand.slot) {
    // The double-buffered arrays: states in inference, state gradients.
    int64_t index = plan.stateIndex(ref.name);
    arg.kind = TiledArg::Kind::Slot;
    arg.index = index;
    switch (ref.kind) {
    case Ref::Kind::State:
      arg.pair = 0;
      return operand.slot == &work.currentStates[index];
    case Ref::Kind::Next:
      arg.pair = 1;
      return operand.slot == &work.nextStates[index];
    case Ref::Kind::Dnext:
      arg.pair = 2;
      return operand.slot == &grads.dnext[index];
    case Ref::Kind::Dstate:
      arg.pair = 3;
      return operand.slot == &grads.dstate[index];
    default:
      return false;
    }
  }
  arg.base = operand.base;
  arg.stepAdvance = operand.stepAdvance;
  return true;
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
    grads.dout = mirror(dOutput, steps * batch * outputWidth, blocks);
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
      device.upload(grads.dnext[i], gradients.finalStateGradients[i].data,
                    count * sizeof(float));
    else
      device.zero(grads.dnext[i], count);
  }
  if (zeroDout)
    device.zero(grads.dout, batch * outputWidth);
  if (reversedDout)
    importReversed(dOutput, reversedDout, outputWidth);
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
    const float *scratch = grads.dinputs[i];
    std::vector<float> host;
    if (!shared) {
      host.resize(sizes.steps * sizes.batch * inputWidth);
      device.download(host.data(), scratch, host.size() * sizeof(float));
      scratch = host.data();
    }
    addWithinLengths(scratch, callers, sizes.steps, sizes.batch, inputWidth,
                     args.lengths, args.reverse);
  }
  for (const WriteBack &back : grads.writeBacks)
    device.download(back.host, back.device, back.count * sizeof(float));
  return device.synchronize();
}

/// The backward step loop on the device, one operation at a time.
Status Execution::runBackwardSteps() {
  for (int64_t step = maxLength - 1; step >= 0; --step) {
    for (size_t i = 0; i < plan.states.size(); ++i)
      device.zero(grads.dstate[i], sizes.batch * width(plan.states[i]));
    for (const BoundOperation &bound : stepOperations)
      if (Status status = runOperation(bound, step, 0, rowsPerStep);
          !status.ok())
        return status;
    for (size_t i = 0; i < plan.states.size(); ++i)
      std::swap(grads.dnext[i], grads.dstate[i]);
  }
  return Status::success();
}

Status Execution::backward(const BackwardArgs &gradients,
                           Blocks &gradientBlocks) {
  gradientArgs = &gradients;
  refreshCallerPointers();
  Status status = setUpGradients(gradients, gradientBlocks);
  if (!status.ok())
    return status;
  zeroGradientBuffers();
  if (!(status = bindOperations(/*backwardPhases=*/true, gradientBlocks)).ok())
    return status;

  if (TiledSteps tiled; describeTiledSteps(tiled, /*backwardPass=*/true) &&
                        runTiledSteps(tiled).ok()) {
    if (maxLength % 2)
      for (size_t i = 0; i < plan.states.size(); ++i)
        std::swap(grads.dnext[i], grads.dstate[i]);
  } else {
    if (!(status = runBackwardSteps()).ok())
      return status;
  }
  int64_t allRows = sizes.steps * sizes.batch;

  for (const BoundOperation &bound : sequenceOperations)
    if (!(status = runOperation(bound, 0, 0, allRows)).ok())
      return status;
  for (const BoundOperation &bound : endOperations)
    if (!(status = runOperation(bound, 0, 0, allRows)).ok())
      return status;
  return finishBackward(gradients);
}

//===----------------------------------------------------------------------===//
// The Cell entry points
//===----------------------------------------------------------------------===//

static int64_t elementCount(const ConstArray &array) {
  int64_t count = 1;
  for (int64_t extent : array.shape)
    count *= extent;
  return count;
}

/// Uploads every param in `params` and every stacked weight of `packed`
/// to `device`, once.
static Expected<std::shared_ptr<const DeviceWeights>>
uploadWeights(const Plan &plan, const std::shared_ptr<Device> &device,
              const std::map<std::string, ConstArray> &params,
              const PackedWeights &host) {
  auto copies = std::make_shared<DeviceWeights>();
  copies->owner = device;
  auto outOfMemory = [] {
    return Status::error("packWeights: out of device memory");
  };
  for (const auto &[name, array] : params) {
    if (!array.data || !plan.findParam(name))
      continue;
    float *copy = copies->place(array.data, elementCount(array));
    if (!copy)
      return outOfMemory();
    copies->params[name] = copy;
  }
  for (size_t w = 0; w < plan.weights.size(); ++w) {
    const WeightDecl &weight = plan.weights[w];
    float *copy = weight.params.size() == 1
                      ? copies->find(weight.params[0])
                      : copies->place(host.pointers()[w],
                                      int64_t(host.stackedSize(w)));
    if (!copy)
      return outOfMemory();
    copies->weights.push_back(copy);
  }
  // The uploads may read the host arrays until the device has run them.
  if (Status status = device->synchronize(); !status.ok())
    return status;
  return std::shared_ptr<const DeviceWeights>(std::move(copies));
}

/// matrix [rows, cols] as [cols, rows], in tiles that stay in cache.
static std::vector<float> transposeMatrix(const float *matrix, int64_t rows,
                                          int64_t cols) {
  constexpr int64_t kTile = 16;
  std::vector<float> transposed(rows * cols);
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (int64_t r = r0; r < std::min(r0 + kTile, rows); ++r)
        for (int64_t c = c0; c < std::min(c0 + kTile, cols); ++c)
          transposed[c * rows + r] = matrix[r * cols + c];
  return transposed;
}

Expected<PackedWeights>
Cell::packWeights(const std::map<std::string, ConstArray> &params) const {
  PackedWeights packed;
  packed.stacked.reserve(plan.weights.size());
  for (const WeightDecl &weight : plan.weights) {
    std::vector<float> rows;
    for (const std::string &name : weight.params) {
      auto param = params.find(name);
      if (param == params.end() || !param->second.data ||
          param->second.shape.size() != 2)
        return Status::error("packWeights: matrix param " + quote(name) +
                             " is missing or not [ROWS, COLS]");
      if (weight.params.size() == 1)
        break;
      const ConstArray &array = param->second;
      rows.insert(rows.end(), array.data,
                  array.data + array.shape[0] * array.shape[1]);
    }
    packed.stacked.push_back(std::move(rows));
    packed.weights.push_back(weight.params.size() == 1
                                 ? params.at(weight.params[0]).data
                                 : packed.stacked.back().data());
  }
  if (!device->sharesHostMemory()) {
    auto copies = uploadWeights(plan, device, params, packed);
    if (!copies)
      return copies.getStatus();
    packed.device = std::move(*copies);
    return packed;
  }
  for (size_t w = 0; w < plan.weights.size(); ++w) {
    int64_t cols = params.at(plan.weights[w].params[0]).shape[1];
    int64_t rows = 0;
    for (const std::string &name : plan.weights[w].params)
      rows += params.at(name).shape[0];
    packed.transposedWeights.push_back(
        transposeMatrix(packed.weights[w], rows, cols));
  }
  return packed;
}

Expected<BoundSizes> cellrt::bindSizes(const Plan &plan,
                                       const ForwardArgs &args) {
  Expected<Sizes> sizes = DimBinder(plan, args).bind();
  if (!sizes)
    return sizes.getStatus();
  return BoundSizes{sizes->steps, sizes->batch, sizes->dims};
}

Status Cell::forward(const ForwardArgs &args) const {
  auto bound = workspaces->sizes.bind(plan, args);
  if (!bound)
    return bound.getStatus();
  const Sizes *sizes = bound->get();
  // Inference reuses the blocks of an earlier call.
  std::unique_ptr<Workspace> work = workspaces->take();
  work->blocks.use(device);
  Status status =
      Execution(plan, *device, args, *sizes, *work, /*training=*/false)
          .forward();
  workspaces->give(std::move(work));
  return status;
}

bool Cell::hasBackward() const { return plan.hasBackward(); }

static Status noBackward(const Plan &plan) {
  return Status::error("cell " + quote(plan.cellName) +
                       " has no backward pass: its plan lists no bstep, bpre, "
                       "wgrad or pgrad directives");
}

Status Cell::forward(const ForwardArgs &args, Tape &tape) const {
  if (!plan.hasBackward())
    return noBackward(plan);
  auto bound = workspaces->sizes.bind(plan, args);
  if (!bound)
    return bound.getStatus();
  const Sizes *sizes = bound->get();
  if (!tape.storage)
    tape.storage = std::make_unique<Tape::Storage>();
  Tape::Storage &record = *tape.storage;
  record.recorded = false;
  record.workspace.blocks.use(device);
  Status status = Execution(plan, *device, args, *sizes, record.workspace,
                            /*training=*/true)
                      .forward();
  if (!status.ok())
    return status;
  record.plan = &plan;
  record.steps = sizes->steps;
  record.batch = sizes->batch;
  record.dims = sizes->dims;
  record.lengths.assign(args.lengths, args.lengths + sizes->batch);
  record.reverse = args.reverse;
  record.recorded = true;
  return Status::success();
}

/// Checks the gradient arrays against the bound sizes.
static Status checkGradients(const Plan &plan, const Sizes &sizes,
                             const BackwardArgs &gradients) {
  auto tooMany = [&](const char *what, size_t count, size_t limit,
                     const char *kind) {
    return Status::error("cell " + quote(plan.cellName) + " has " +
                         std::to_string(limit) + " " + kind + ", got " +
                         std::to_string(count) + " " + what);
  };
  if (gradients.finalStateGradients.size() > plan.states.size())
    return tooMany("final state gradients",
                   gradients.finalStateGradients.size(), plan.states.size(),
                   "states");
  if (gradients.initialStateGradients.size() > plan.states.size())
    return tooMany("initial state gradients",
                   gradients.initialStateGradients.size(), plan.states.size(),
                   "states");
  if (gradients.inputGradients.size() > plan.inputs.size())
    return tooMany("input gradients", gradients.inputGradients.size(),
                   plan.inputs.size(), "inputs");

  std::vector<ShapeConstraint> constraints;
  auto add = [&](const std::string &label, const DimExpr &length,
                 const std::vector<int64_t> &actual, bool perStep) {
    if (perStep)
      constraints.push_back({label,
                             {"T", "B", length.str()},
                             {DimExpr::constant(sizes.steps),
                              DimExpr::constant(sizes.batch), length},
                             actual});
    else
      constraints.push_back({label,
                             {"B", length.str()},
                             {DimExpr::constant(sizes.batch), length},
                             actual});
  };
  if (gradients.outputGradient.data)
    add("the output gradient", plan.outputWidth, gradients.outputGradient.shape,
        true);
  for (size_t i = 0; i < gradients.finalStateGradients.size(); ++i)
    if (gradients.finalStateGradients[i].data)
      add("final state gradient " + quote(plan.states[i].name),
          plan.states[i].length, gradients.finalStateGradients[i].shape, false);
  for (size_t i = 0; i < gradients.initialStateGradients.size(); ++i)
    if (gradients.initialStateGradients[i].data)
      add("initial state gradient " + quote(plan.states[i].name),
          plan.states[i].length, gradients.initialStateGradients[i].shape,
          false);
  for (size_t i = 0; i < gradients.inputGradients.size(); ++i)
    if (gradients.inputGradients[i].data)
      add("input gradient " + quote(plan.inputs[i].name), plan.inputs[i].length,
          gradients.inputGradients[i].shape, true);
  for (const auto &[name, array] : gradients.paramGradients) {
    const ParamDecl *param = plan.findParam(name);
    if (!param) {
      std::string known;
      for (const ParamDecl &decl : plan.params)
        known += " " + decl.name;
      return Status::error("gradient for unknown param " + quote(name) +
                           " (cell " + quote(plan.cellName) +
                           " has params:" + known + ")");
    }
    if (!array.data)
      continue;
    std::vector<std::string> text;
    for (const DimExpr &extent : param->shape)
      text.push_back(extent.str());
    constraints.push_back(
        {"gradient of param " + quote(name), text, param->shape, array.shape});
  }
  for (const ShapeConstraint &constraint : constraints) {
    Status status = checkConstraint(constraint, sizes);
    if (!status.ok())
      return status;
  }
  return Status::success();
}

Status Cell::backward(const ForwardArgs &args, const BackwardArgs &gradients,
                      Tape &tape) const {
  if (!plan.hasBackward())
    return noBackward(plan);
  if (!tape.isRecorded())
    return Status::error("backward: the tape holds no recorded forward pass "
                         "(call forward(args, tape) first)");
  const Tape::Storage &record = *tape.storage;
  if (record.plan != &plan)
    return Status::error("backward: the tape was recorded by another cell");
  auto bound = workspaces->sizes.bind(plan, args);
  if (!bound)
    return bound.getStatus();
  const Sizes *sizes = bound->get();
  if (sizes->steps != record.steps || sizes->batch != record.batch ||
      sizes->dims != record.dims) {
    auto describe = [&](int64_t steps, int64_t batch,
                        const std::map<std::string, int64_t> &dims) {
      std::string text =
          "T=" + std::to_string(steps) + " B=" + std::to_string(batch);
      for (const std::string &dim : plan.dims)
        text += " " + dim + "=" + std::to_string(dims.at(dim));
      return text;
    };
    return Status::error("backward: the arguments bind " +
                         describe(sizes->steps, sizes->batch, sizes->dims) +
                         " but the tape was recorded with " +
                         describe(record.steps, record.batch, record.dims));
  }
  for (int64_t b = 0; b < record.batch; ++b)
    if (args.lengths[b] != record.lengths[b])
      return Status::error("backward: lengths[" + std::to_string(b) +
                           "] = " + std::to_string(args.lengths[b]) +
                           " but the tape was recorded with " +
                           std::to_string(record.lengths[b]));
  if (args.reverse != record.reverse)
    return Status::error(std::string("backward: args.reverse is ") +
                         (args.reverse ? "true" : "false") +
                         " but the tape was recorded with " +
                         (record.reverse ? "true" : "false"));
  Status status = checkGradients(plan, *sizes, gradients);
  if (!status.ok())
    return status;
  tape.storage->gradientBlocks.use(device);
  return Execution(plan, *device, args, *sizes, tape.storage->workspace,
                   /*training=*/true)
      .backward(gradients, tape.storage->gradientBlocks);
}
