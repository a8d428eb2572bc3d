//===- Execution.h - One call of a plan on a device -------------*- C++ -*-===//
//
// The executor's internals, shared by its files: how a call's operands are
// bound (Operand, BoundOperation, BoundProgram), the memory a call keeps
// for the next one (Blocks, Executable, ExecutablePool) and for backward
// (Tape::Storage), and Execution, which runs one call's forward or
// backward operations. Execution.cpp sets up, binds and runs the forward
// operations, ExecutionTiled.cpp describes the tiled steps,
// ExecutionBackward.cpp runs backward, Cell.cpp the Cell entry points.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_EXECUTION_H
#define CELLRT_EXECUTION_H

#include "DimBinder.h"
#include "Gemm.h"
#include "HostDevice.h"
#include "PlanLayout.h"
#include "Schedules.h"
#include "TiledSteps.h"
#include "cellrt/Device.h"
#include "cellrt/Runtime.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

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

namespace cellrt::detail {

inline std::string quote(const std::string &text) { return "'" + text + "'"; }

inline std::string planError(const Operation &op, const std::string &message) {
  return locateOperation(op) + ": " + message;
}

/// Where an operand's rows live: `base` (already at its column offset),
/// `*array + column` (a caller's array, or the device's copy of it: the
/// executable's entry for it is filled by every call, so that the binding
/// outlives the call), or `*slot + column` (one half of a double-buffered
/// array whose halves swap every step); plus `stepAdvance` floats per step.
struct Operand {
  float *const *slot = nullptr;
  float *const *array = nullptr;
  float *base = nullptr;
  int64_t column = 0;
  int64_t stride = 0;
  int64_t stepAdvance = 0;

  float *origin() const {
    return slot ? *slot + column : array ? *array + column : base;
  }
  float *at(int64_t step) const { return origin() + step * stepAdvance; }
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
  /// Gemm, Wgrad: the stacked weight (refreshed by every call from the
  /// executable's weight `weightIndex`) and its shape.
  const float *weight = nullptr;
  int64_t weightIndex = -1;
  int64_t weightRows = 0, weightCols = 0;
  /// Gemm: the weight packed for oneDNN's matmul, where the caller's
  /// PackedWeights hold it (forward) or the per-step schedule packed it for
  /// the call (Execution::packStepProducts, forward and backward).
  const PackedProduct *packedProduct = nullptr;
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
    weightIndex = -1;
    weightRows = weightCols = 0;
    packedProduct = nullptr;
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
  BoundOperation *begin() { return items.data(); }
  BoundOperation *end() { return items.data() + count; }
  bool empty() const { return count == 0; }

private:
  std::vector<BoundOperation> items;
  size_t count = 0;
};

/// What a call binds, kept in its executable so that the next call with the
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

  bool isOn(const std::shared_ptr<Device> &wanted) const {
    return device == wanted;
  }
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

/// What a forward binding depends on besides the plan: the sizes (kept
/// alive, so that their address identifies them) and the choices that
/// change which blocks a call allocates, in which order, and where the
/// operands point.
struct BindingKey {
  std::shared_ptr<const Sizes> sizes;
  bool training = false, reverse = false, readsOut = false,
       callerOnDevice = false, packedWeights = false;

  bool operator==(const BindingKey &other) const {
    return sizes == other.sizes && training == other.training &&
           reverse == other.reverse && readsOut == other.readsOut &&
           callerOnDevice == other.callerOnDevice &&
           packedWeights == other.packedWeights;
  }
};

/// A cell bound to one shape on its device, in its precision (issue #44):
/// the call's arrays (device addresses), its bound operations and the
/// schedule that runs them, kept for the next call. A call with the same
/// BindingKey (a decoder's every step, a training loop's batches of one
/// shape) finds its blocks, operations and operands where the previous
/// one left them and only fills the entries below with its own arrays. A
/// Cell keeps one per concurrent inference call (ExecutablePool); a
/// training-mode forward keeps its own in the tape for backward().
struct Executable {
  Blocks blocks;
  /// The forward kernels' scratch, apart from `blocks`: what a call
  /// allocates there may change from call to call (a caller's arrays used
  /// in place or copied), the bound scratch may not.
  Blocks scratch;

  /// Blocks of another device are released, and their bindings forgotten.
  void use(const std::shared_ptr<Device> &device) {
    if (!blocks.isOn(device))
      boundFor.reset();
    blocks.use(device);
    scratch.use(device);
  }

  /// The forward operations, bound for `boundFor` (none when unset), and
  /// the backward ones, bound by every backward call.
  BoundProgram bound, backwardBound;
  std::optional<BindingKey> boundFor;
  /// How the bound forward runs its steps (and backward, training's).
  ScheduleKind schedule = ScheduleKind::Steps;
  /// TiledSchedule: the forward's steps as tiles (ScanSchedule: a decoding
  /// step's products), described by the first call that wanted them (none:
  /// they do not tile), and what running them prepared (micro-kernels, the
  /// members' buffers), kept for later calls.
  std::optional<std::optional<TiledSteps>> tiledForward;
  std::shared_ptr<TiledRun> tiledRun;

  /// Sized for `plan` (a no-op after the first call), every entry cleared.
  void reset(const Plan &plan) {
    blocks.rewind();
    auto clear = [](auto &entries, size_t count) {
      entries.assign(count, nullptr);
    };
    clear(inputs, plan.inputs.size());
    clear(buffers, plan.buffers.size());
    clear(currentStates, plan.states.size());
    clear(nextStates, plan.states.size());
    clear(weights, plan.weights.size());
    clear(params, plan.params.size());
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
  /// Every param as the caller passed it (by index, or by name), in the
  /// plan's order.
  std::vector<const float *> callerParams;
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

/// Workspaces of inference calls, kept between calls: a call takes one (or
/// a new one when all are in use by other threads) and gives it back. Also
/// the sizes of the Cell's last shapes.
class ExecutablePool {
public:
  /// Workspaces kept bound to their shapes before a call of a new shape
  /// rebinds one: as many as SizesCache keeps shapes, so that a Cell called
  /// with a few shapes in turn binds each once.
  static constexpr size_t kBoundShapes = SizesCache::kEntries;

  SizesCache sizes;

  /// A spare executable bound for `sizes` if there is one (a call of the
  /// same kind binds nothing), else a new one while fewer than
  /// kBoundShapes exist, else the last one given back.
  std::unique_ptr<Executable> take(const std::shared_ptr<const Sizes> &sizes) {
    std::lock_guard<std::mutex> lock(mutex);
    auto bound = std::find_if(spare.rbegin(), spare.rend(), [&](auto &work) {
      return work->boundFor && work->boundFor->sizes == sizes;
    });
    if (bound == spare.rend() && (spare.empty() || made < kBoundShapes)) {
      ++made;
      return std::make_unique<Executable>();
    }
    auto chosen = bound == spare.rend() ? spare.end() - 1 : bound.base() - 1;
    std::unique_ptr<Executable> work = std::move(*chosen);
    spare.erase(chosen);
    return work;
  }
  void give(std::unique_ptr<Executable> work) {
    std::lock_guard<std::mutex> lock(mutex);
    spare.push_back(std::move(work));
  }

private:
  std::mutex mutex;
  std::vector<std::unique_ptr<Executable>> spare;
  size_t made = 0;
};

/// How many times forward calls have bound their operations in this
/// process (tests check that a shape already bound is not bound again).
int64_t forwardBindings();

/// Runs the forward or backward operations of one call on a device.
class Execution {
public:
  /// `backwardPass`: the call will run backward() (its operations are
  /// bound apart from the forward ones, which stay bound for the next
  /// forward).
  Execution(const Plan &plan, Device &device, const ForwardArgs &args,
            std::shared_ptr<const Sizes> boundSizes, Executable &work,
            bool training, bool backwardPass = false)
      : plan(plan), device(device), shared(device.sharesHostMemory()),
        callerOnDevice(!shared && args.memory == Memory::Device),
        inPlace(shared || callerOnDevice), args(args),
        sizesHandle(std::move(boundSizes)), sizes(*sizesHandle), work(work),
        training(training),
        program(backwardPass ? work.backwardBound : work.bound),
        rowsPerStep(sizes.batch),
        maxLength(*std::max_element(args.lengths, args.lengths + sizes.batch)),
        layout(*sizes.layout), dimValues(layout.dimValues) {}
  /// The bound lists outlive the call in the executable: none keeps a
  /// pointer to this call's packed weights.
  ~Execution() {
    if (!callProducts.empty())
      for (BoundOperation &bound : stepOperations)
        bound.packedProduct = nullptr;
  }
  Execution(const Execution &) = delete;
  Execution &operator=(const Execution &) = delete;

  /// Fills `work` and runs the pre and step operations.
  Status forward();
  /// Runs the backward operations over the arrays a training-mode forward
  /// left in `work`, with its own arrays in `gradientBlocks`.
  Status backward(const BackwardArgs &gradients, Blocks &gradientBlocks);

private:
  friend class StepSchedule;
  friend class TiledSchedule;
  friend class ScanSchedule;

  Status setUp();
  void stackWeights();
  void refreshCallerPointers();
  /// The key this call's forward binding is valid for.
  ScheduleKind pickSchedule() const;
  BindingKey bindingKey() const {
    return {sizesHandle,    training,       args.reverse,
            readsOutRows(), callerOnDevice, usesPackedWeights()};
  }
  Status bindOperations(bool backwardPhases, Blocks &scratchBlocks);
  /// Points a product's weight and packed weight at this call's.
  void bindWeight(BoundOperation &bound);
  /// Every bound product's weight, after setUp filled this call's.
  void refreshWeights();
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
  void packStepProducts();
  /// A Gemm operation's product over rows [rowBegin, rowEnd) of `step`.
  Status runGemm(const BoundOperation &bound, int64_t step, int64_t rowBegin,
                 int64_t rowEnd);
  Status runScan(const BoundOperation &bound);
  /// Whether backward's operations after the steps are products and sums
  /// alone (no kernel writes memory between them).
  bool onlyProductsAfterTheSteps() const;
  /// Whether this call gains from tiles (mode, threads, steps, packed
  /// weights): a shape's description stays valid for calls that do not.
  bool tilesPay() const;
  /// The shape's steps as tiles, if they tile (then refreshed for this
  /// call).
  bool describeTiledSteps(TiledSteps &tiled, bool backwardPass) const;
  /// Points a description at this call's weights, panels, lengths, steps
  /// and states.
  void refreshTiledSteps(TiledSteps &tiled) const;
  bool shortCallTiles() const;
  bool eachSegmentIsAnArgument(const std::string &hidden) const;
  bool describeTiledProduct(const BoundOperation &bound, bool backwardPass,
                            std::map<std::string, int64_t> &productPhase,
                            const TiledSteps &tiled, TiledPhase &phase) const;
  bool describeTiledWeight(const BoundOperation &bound,
                           const std::string &hidden, bool hiddenDepth,
                           TiledPhase &phase) const;
  void describeInputProducts(std::map<std::string, int64_t> &productPhase,
                             TiledSteps &tiled) const;
  bool describeInputProduct(const BoundOperation &bound,
                            const std::string &hidden, TiledPhase &phase) const;
  /// Whether this call of a scan plan gains from tiling its products (a
  /// decoding step with packed weights): a shape's description stays valid
  /// for calls that do not.
  bool scanTilesPay() const;
  bool describeScanProducts(TiledSteps &tiled) const;
  bool describeHiddenBlocks(TiledSteps &tiled) const;
  void describeCallShape(TiledSteps &tiled, bool backwardPass) const;
  bool onlyStepKernelsRead(const BoundOperation &product) const;
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
  /// Packed weights stand in for stacking the caller's params: as host
  /// arrays where memory is shared (training too: backward reads them
  /// through the same args, which the caller keeps alive as it does its
  /// params), else as the device's copies on inference calls.
  bool usesPackedWeights() const {
    return args.packedWeights &&
           (shared || (!training && args.packedWeights->onDevice()));
  }
  const DeviceWeights *residentWeights() const {
    return usesPackedWeights() && !shared ? args.packedWeights->onDevice()
                                          : nullptr;
  }
  /// Fills work.callerParams from the arguments.
  void findCallerParams();
  /// The caller's param `index`, given by index or by name.
  const float *paramData(size_t index) const {
    return work.callerParams[index];
  }
  int64_t paramCount(const std::string &name) const {
    return layout.paramCounts[plan.findParam(name) - plan.params.data()];
  }
  /// A caller's array as the device sees it: itself when the device can
  /// use it in place, else a copy in `blocks` (filled once the call's
  /// allocations have succeeded, by uploadPending()).
  float *mirror(const float *caller, int64_t count, Blocks &blocks);
  /// Like mirror, and the copy is written back to `caller` when the call
  /// ends.
  float *mirrorBack(float *caller, int64_t count, Blocks &blocks);
  /// A host array of the executor's own as the device sees it.
  float *staged(const float *host, int64_t count, Blocks &blocks);
  void uploadPending();
  /// Copies `count` floats of a caller's array into device memory, or of
  /// device memory out to a caller's array: a copy on the device where the
  /// caller's arrays are there, else an upload or download.
  void importCaller(float *target, const float *caller, int64_t count);
  void exportCaller(float *caller, const float *source, int64_t count);
  /// A caller's array [count] in host memory: itself, or a download.
  const float *callerOnHost(const float *caller, int64_t count,
                            std::vector<float> &copy);
  /// Device rows [T, B, width] from a caller's rows (`fromCaller`, else
  /// host rows of the executor's) reversed within lengths.
  void importReversed(const float *source, bool fromCaller, float *target,
                      int64_t width);
  /// A caller's rows (`toCaller`, else host rows of the executor's) from
  /// device rows [T, B, width], reversed within lengths.
  void exportReversed(const float *source, float *target, int64_t width,
                      bool toCaller);
  /// Whether the caller reads the `out` rows: the output or a probe.
  bool readsOutRows() const;
  /// Splits the kernels' `out` rows into the output and the probe arrays.
  void exportOutputAndProbes();
  /// The output gradient as [T, B, outputWidth] host rows (zeros for the
  /// probes' columns): the caller's own array when the cell has no probes.
  const float *widenOutputGradient(const float *dOutput);

  const Plan &plan;
  Device &device;
  /// Device memory is host memory (the CPU).
  const bool shared;
  /// The caller's arrays are in the device's own memory (Memory::Device
  /// on a GPU): used in place, copied on the device, never dereferenced
  /// here.
  const bool callerOnDevice;
  /// The device reads and writes the caller's arrays where they are.
  const bool inPlace;
  const ForwardArgs &args;
  /// This call's per-step weights packed for oneDNN's matmul
  /// (packStepProducts), where the caller's PackedWeights hold none.
  std::vector<std::unique_ptr<PackedProduct>> callProducts;
  const std::shared_ptr<const Sizes> sizesHandle;
  const Sizes &sizes;
  Executable &work;
  const bool training;
  /// The bound operations this call runs.
  BoundProgram &program;
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
  BoundList &sequenceOperations = program.sequence;
  BoundList &stepOperations = program.steps;
  BoundList &endOperations = program.end;
  BoundList &scanOperations = program.scan;
  std::vector<float *> &kernelPointers = program.kernelPointers;
  std::vector<int64_t> &kernelStrides = program.kernelStrides;
};

} // namespace cellrt::detail

struct cellrt::Tape::Storage {
  bool recorded = false;
  /// The plan that recorded it (a Cell's plan lives as long as the Cell).
  const Plan *plan = nullptr;
  int64_t steps = 0, batch = 0;
  std::map<std::string, int64_t> dims;
  std::vector<int32_t> lengths;
  bool reverse = false;
  Memory memory = Memory::Host;
  detail::Executable executable;
  /// backward()'s own arrays, reused from call to call.
  detail::Blocks gradientBlocks;
};

#endif // CELLRT_EXECUTION_H
