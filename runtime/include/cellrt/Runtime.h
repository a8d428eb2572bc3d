//===- cellrt/Runtime.h - Run compiled cells over batches -------*- C++ -*-===//
//
// The C++ API of the runtime. A `Cell` wraps one compiled cell (its
// `cellrt_image`): it owns the parsed plan and runs it over a padded batch of
// sequences, calling the GEMM library and the cell's fused kernels.
//
//   cellrt::Expected<cellrt::Cell> cell = cellrt::Cell::load(image);
//   cellrt::ForwardArgs args;
//   args.inputs = {{x, {T, B, I}}};
//   args.lengths = lengths;
//   args.params = {{"Wx", {wx, {H, I}}}, {"Wh", {wh, {H, H}}}};
//   args.output = {out, {T, B, H}};
//   cellrt::Status status = cell->forward(args);
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_RUNTIME_H
#define CELLRT_RUNTIME_H

#include "cellrt/Kernel.h"
#include "cellrt/Plan.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cellrt {

class Device;
namespace detail {
class ExecutablePool;
} // namespace detail

/// A dense row-major float32 array the caller owns.
struct ConstArray {
  const float *data = nullptr;
  std::vector<int64_t> shape;
};

/// A dense row-major float32 array the runtime writes.
struct MutableArray {
  float *data = nullptr;
  std::vector<int64_t> shape;
};

/// Where a call's float arrays are. Host: the caller's memory, which a
/// device with memory of its own (a GPU) copies in and the results out of
/// on every call. Device: memory of the cell's device (Cell::allocateArray),
/// used in place, so a call on a GPU copies none of its arrays (the GPU
/// counterpart of keeping tensors on the GPU). `lengths` and `sourceRows`
/// stay host arrays either way: the host schedules the steps by them. On
/// the CPU both are host memory and the two are the same.
enum class Memory { Host, Device };

/// The device's own copies of a cell's params and stacked weights, kept by
/// PackedWeights for a cell on a device with memory of its own (a GPU).
struct DeviceWeights;

/// A weight packed once for oneDNN's matmul primitive (runtime/Gemm.h).
class PackedProduct;

/// The CPU's tiled steps' copies of the recurrent weights, in the panels
/// their micro-kernels read, made by the first call that tiles.
struct PackedPanels;

/// What a PackedWeights is for: inference calls only, or training calls
/// (forward and backward) as well.
enum class PackFor { Inference, Training };

/// A cell's stacked weights (`weight W0 Wz Wr Wh` in the plan) built once.
/// Calls stack the caller's params on every call unless given these: worth
/// it whenever params stay the same across many calls (decoding, beam
/// search, evaluation). Refers to the params' memory: rebuild after the
/// params change. On the CPU it also holds every weight packed for oneDNN's
/// matmul primitive, the layout in which the products of few rows run
/// fastest (a decoding step's: oneDNN's sgemm packs a weight it must read
/// transposed on every call), at the cost of a second copy of the weights.
/// Products of 4 rows or more read that copy, fewer rows the stacked one
/// (or the caller's array), so results with packed weights differ from
/// those without in the last bits (the products add in another order) and
/// depend on whether B >= 4. On a
/// device with memory of its own (a GPU) it holds the device's copies of
/// every param given instead, so inference calls upload no params at all.
/// The CPU's tiled steps (a sequence's products per block of hidden units)
/// keep each weight they multiply by, recurrent and (in inference) input
/// ones, in their panel layout here after the first call that packs it (a
/// third copy), where calls without packed weights pack it on every call
/// (~3% of an LSTM's inference at 1 thread). A PackedWeights may be shared
/// by concurrent calls.
class PackedWeights {
public:
  PackedWeights() = default;
  /// One entry per plan weight: the stacked copy, or the caller's param
  /// when the weight has a single part.
  const std::vector<const float *> &pointers() const { return weights; }
  /// The device's copies, or null on a device that shares host memory.
  const DeviceWeights *onDevice() const { return device.get(); }
  /// Floats in the stacked copy of plan weight `w` (0 for a single part).
  size_t stackedSize(size_t w) const { return stacked[w].size(); }
  /// Plan weight `w` packed for oneDNN's matmul, if it was packed as
  /// [rows, cols]; else (other sizes, or a device with memory of its own)
  /// null.
  const PackedProduct *product(size_t w, int64_t rows, int64_t cols) const {
    return w < products.size() && productShapes[w] == std::make_pair(rows, cols)
               ? products[w].get()
               : nullptr;
  }
  /// Plan weight `w` packed for backward's products by it (dIN += dOUT ·
  /// W: a step's state gradient, and a short call's input gradient after
  /// the steps), if it was packed as [rows, cols] for training: only in
  /// bf16, where a product by the plain weight rounds the whole weight
  /// again (a decoder trained step by step would at every step); f32's
  /// sgemm reads it as fast plain.
  const PackedProduct *backwardProduct(size_t w, int64_t rows,
                                       int64_t cols) const {
    return w < backwardProducts.size() &&
                   productShapes[w] == std::make_pair(rows, cols)
               ? backwardProducts[w].get()
               : nullptr;
  }
  /// The tiled steps' panels (null on a device with memory of its own).
  PackedPanels *panels() const { return tiledPanels.get(); }

private:
  friend class Cell;
  std::vector<std::vector<float>> stacked;
  std::vector<std::shared_ptr<const PackedProduct>> products;
  std::vector<std::shared_ptr<const PackedProduct>> backwardProducts;
  std::vector<std::pair<int64_t, int64_t>> productShapes;
  std::vector<const float *> weights;
  std::shared_ptr<const DeviceWeights> device;
  std::shared_ptr<PackedPanels> tiledPanels;
};

/// Everything one forward pass over a padded batch reads and writes.
/// T (steps) and B (batch) come from the first input's shape, or from the
/// output's if the cell has no inputs; all shapes must agree with them.
struct ForwardArgs {
  /// One per plan input, in plan order: [T, B, LEN], time-major.
  std::vector<ConstArray> inputs;
  /// B sequence lengths, 1 <= lengths[b] <= T.
  const int32_t *lengths = nullptr;
  /// One per plan state, in plan order, [B, LEN]; empty, or an entry with
  /// null data, means zeros.
  std::vector<ConstArray> initialStates;
  /// Every plan param by name: [ROWS, COLS] or [LEN].
  std::map<std::string, ConstArray> params;
  /// Or every plan param by index, in Plan::params' order: when not empty,
  /// it replaces `params` (which is then ignored), and a call finds no
  /// param by its name.
  std::vector<ConstArray> paramsByIndex;
  /// Run each sequence from step lengths[b]-1 down to 0. Outputs stay aligned
  /// with the inputs (output t belongs to input t); padding stays at the end.
  bool reverse = false;
  /// [T, B, output width]; zeros at padded steps. Null data: not written.
  MutableArray output;
  /// One per plan probe (cellc --probe), in plan order: [T, B, LEN], the
  /// probed value at every step (zeros at padded steps, aligned with the
  /// inputs in reverse as the output is). Empty, or null data: not written.
  std::vector<MutableArray> probes;
  /// One per plan state, in plan order, [B, LEN]: each sequence's state after
  /// its last step. Empty, or an entry with null data: not written.
  std::vector<MutableArray> finalStates;
  /// Optional: the params' stacked weights from Cell::packWeights, so that
  /// the call does not stack them again (a decoder trained step by step
  /// would stack every weight at every step). In training on the CPU the
  /// backward reads them too: keep them alive and the params unchanged
  /// until then, as for the params themselves.
  const PackedWeights *packedWeights = nullptr;
  /// Where every float array above is (inputs, states, params, output,
  /// probes); `lengths` is always host memory.
  Memory memory = Memory::Host;
};

/// What forward() keeps for backward(): every step's `step:` buffers, the
/// state history, the bound dims, stacked weights and (in reverse) the
/// reversed inputs. Reusable across calls; move-only.
class Tape {
public:
  Tape();
  ~Tape();
  Tape(Tape &&) noexcept;
  Tape &operator=(Tape &&) noexcept;
  /// True once a training-mode forward has filled it.
  bool isRecorded() const;

  struct Storage;
  std::unique_ptr<Storage> storage;
};

/// Gradients for backward(). Inputs to it are the gradients of the loss
/// with respect to the outputs and the final states; it ACCUMULATES (+=)
/// into the gradient arrays, which the caller zeroes when it wants to.
struct BackwardArgs {
  /// dL/d(output), [T, B, output width]; null data = zero.
  ConstArray outputGradient;
  /// One per plan state, [B, LEN]: dL/d(final state); empty/null = zero.
  std::vector<ConstArray> finalStateGradients;
  /// One per plan input, [T, B, LEN]; null data = not wanted.
  std::vector<MutableArray> inputGradients;
  /// One per plan state, [B, LEN]: dL/d(initial state); null = not wanted.
  std::vector<MutableArray> initialStateGradients;
  /// Param gradients by name, same shapes as the params; missing = not
  /// wanted.
  std::map<std::string, MutableArray> paramGradients;
  /// Where every array above is: where the forward's arrays are.
  Memory memory = Memory::Host;
};

/// One step of a batch of states, for decoders and beam search.
struct StepArgs {
  /// One per plan input, [B, LEN]: this step's input (the input projection
  /// runs inside, fused with the step's own GEMMs).
  std::vector<ConstArray> inputs;
  /// One per plan state, [B, LEN]; empty, or null data, means zeros.
  std::vector<ConstArray> states;
  /// Beam search: when set, row b of every state is read from row
  /// sourceRows[b] of `states` (the surviving hypotheses' parents). `states`
  /// may then have any number of rows, e.g. only the previous step's live
  /// hypotheses.
  const int32_t *sourceRows = nullptr;
  /// The params by name or, when not empty, by index (as in ForwardArgs).
  std::map<std::string, ConstArray> params;
  std::vector<ConstArray> paramsByIndex;
  /// [B, output width]; null data: not written.
  MutableArray output;
  /// One per plan probe, in plan order, [B, LEN]; empty, or null data: not
  /// written.
  std::vector<MutableArray> probes;
  /// One per plan state, [B, LEN]: the states after this step. May not
  /// alias `states`.
  std::vector<MutableArray> nextStates;
  /// Optional and recommended for decoders: Cell::packWeights(params), so a
  /// step does not stack the weights again.
  const PackedWeights *packedWeights = nullptr;
  /// Where every float array above is; `sourceRows` is always host memory.
  Memory memory = Memory::Host;
};

/// Floats in a cell's device memory, for calls with Memory::Device: GPU
/// memory on a GPU, host memory on the CPU, so the same code runs on
/// both. Move-only; the memory is freed with the array (it keeps the
/// device alive until then).
class DeviceArray {
public:
  DeviceArray() = default;
  ~DeviceArray();
  DeviceArray(DeviceArray &&other) noexcept;
  DeviceArray &operator=(DeviceArray &&other) noexcept;
  DeviceArray(const DeviceArray &) = delete;
  DeviceArray &operator=(const DeviceArray &) = delete;

  /// The device address, for the calls' arrays (offsets into it are fine).
  float *data() const { return memory; }
  int64_t size() const { return count; }
  /// Copies `floats` floats from `host` to elements [offset, offset +
  /// floats) and waits for the copy: `host` may be reused as soon as this
  /// returns, and any cell on the device may read the array.
  Status upload(const float *host, int64_t floats, int64_t offset = 0);
  /// Copies elements [offset, offset + floats) to `host`, after every call
  /// queued before on the device has finished.
  Status download(float *host, int64_t floats, int64_t offset = 0) const;

private:
  friend class Cell;
  Status checkRange(int64_t floats, int64_t offset, const char *what) const;
  std::shared_ptr<Device> device;
  float *memory = nullptr;
  int64_t count = 0;
};

/// Threads for the fused kernels (rows split across them). Default:
/// $CELLRT_NUM_THREADS, else $OMP_NUM_THREADS, else every core. The GEMMs
/// follow oneDNN's OpenMP settings, but for products under 2 MFLOP, which
/// run on the calling thread alone (a decoding step's); with more than one
/// thread, run with OMP_WAIT_POLICY=PASSIVE so oneDNN's idle threads do
/// not spin, or (what the drivers do) with CELLRT_POOL=openmp and a short
/// GOMP_SPINCOUNT, so that the kernels run on oneDNN's OpenMP threads too:
/// one team for both (README.md, "OpenMP's idle threads: one team").
void setNumThreads(int threads);
int getNumThreads();

/// Runs body(begin, end) over [0, rows) split across the kernels' threads
/// (the caller's thread takes the first chunk) when `work`, about rows x
/// elements per row, is worth a wake-up; else in one call. Chunks are
/// contiguous and disjoint. Drivers use it so their own element-wise layers
/// share the kernels' threads instead of starting another pool. A call from
/// inside a body (or anything in a body that uses the kernels' threads,
/// such as a bf16 product) runs in one call on that thread.
void parallelFor(int64_t rows, int64_t work,
                 const std::function<void(int64_t, int64_t)> &body);

/// out[m, n] = beta * out + op(a) · op(b), row-major with the given row
/// strides, beta 0 or 1, in `precision`: f32, or both operands rounded to
/// bfloat16 and summed in f32, as a cell's products are
/// (Cell::withPrecision). op(a) is [m, k], a stored [k, m] when
/// transposeA; op(b) is [k, n], b stored [n, k] when transposeB. For
/// drivers whose own layers should multiply as their cells do.
Status multiply(Precision precision, bool transposeA, bool transposeB,
                int64_t m, int64_t n, int64_t k, const float *a,
                int64_t aStride, const float *b, int64_t bStride, float beta,
                float *out, int64_t outStride);

/// Fills `array` (host memory, [ROWS, COLS] or [LEN]) as `scheme` says for
/// the param called `name`: the values come from a stream of its own,
/// seeded by `seed` and `name`, so the same seed and name give the same
/// floats on every platform, and other params do not change them
/// (docs/cell-language.md, "Initialisers"). InitScheme::none() leaves the
/// array as it is. Cell::initParams is this for each param of a cell.
Status initArray(const InitScheme &scheme, const std::string &name,
                 uint64_t seed, const MutableArray &array);

/// The sizes a call binds: steps, batch and every plan dim.
struct BoundSizes {
  int64_t steps = 0, batch = 0;
  std::map<std::string, int64_t> dims;
};

/// Binds the plan's dims from the arrays' shapes and checks every array,
/// exactly as Cell::forward does (for other executors of the same plan).
Expected<BoundSizes> bindSizes(const Plan &plan, const ForwardArgs &args);

/// A compiled cell ready to run. Loading parses the plan once; running is
/// const and keeps no state between calls, so one Cell may serve several
/// threads.
/// A product of a stacked weight and an input that Cell::withInputProducts
/// made an input of its own: `input` = `source` times `weight`^T, one row
/// per row of the source, [T, B, rows of the weight].
struct InputProduct {
  std::string input, weight, source;
};

class Cell {
public:
  /// Parses the image's plan and checks it against the image's kernels.
  static Expected<Cell> load(const cellrt_image &image);

  const Plan &getPlan() const { return plan; }
  /// The name the image gives kernel `index` ("" if it has none).
  const std::string &getKernelName(int64_t index) const {
    return kernelNames[index];
  }

  /// Runs the cell over a padded batch. Shapes bind the plan's dimensions; a
  /// mismatch is an error naming the array and both shapes.
  Status forward(const ForwardArgs &args) const;

  /// Forward in training mode: like forward(args), and records in `tape`
  /// what backward() needs. Requires a plan with backward directives.
  Status forward(const ForwardArgs &args, Tape &tape) const;

  /// Backpropagates through the forward recorded in `tape` by this same
  /// Cell object (same args, which must still be alive: params and inputs
  /// are read again).
  Status backward(const ForwardArgs &args, const BackwardArgs &gradients,
                  Tape &tape) const;

  /// True when the plan has backward directives.
  bool hasBackward() const;

  /// Advances B states by one step with the cell's fused kernels.
  Status step(const StepArgs &args) const;

  /// The same cell reading each product of a weight and an input that the
  /// plan computes before the time loop (`pre gemm`) as an input of its own
  /// (`pre_BUFFER`, after the plan's inputs; an input read only by such
  /// products is dropped), and giving that input's gradient instead of
  /// running the products' backward: a caller that runs the cell many
  /// times over the same input computes the products, and their backward,
  /// once (Cseq2seq re-reads the source at every target step). Same
  /// kernels, params and states; `products` lists the new inputs.
  Expected<Cell> withInputProducts(std::vector<InputProduct> &products) const;

  /// The same cell with its products in `precision`: bf16 rounds both
  /// operands of every product (weights, inputs, states, gradients) to
  /// bfloat16 and sums in f32; kernels, states and every array stay f32.
  /// A cell compiled with `cellc --precision bf16` starts in bf16. The CPU
  /// runs either; a device that multiplies only in f32 (the CUDA backend,
  /// today) gives an error for bf16. Weights packed by a cell of another
  /// precision still work, multiplied as plain ones.
  Expected<Cell> withPrecision(Precision precision) const;
  Precision getPrecision() const;

  /// `count` floats of this cell's device memory (contents undefined), for
  /// calls whose arrays are Memory::Device.
  Expected<DeviceArray> allocateArray(int64_t count) const;

  /// Draws the params in `params` (any of the plan's, by name; host
  /// arrays shaped as in ForwardArgs, one binding of the dims) from `seed`:
  /// each by the initialiser its cell declares (`= 1`, `~ orthogonal`),
  /// one without by `fallback` (InitScheme::none(): left as it is). Every
  /// array is checked before any is written. A param's values depend only
  /// on the seed, its name, its shape and its scheme (initArray):
  ///
  ///   std::map<std::string, cellrt::MutableArray> arrays;
  ///   for (auto &[name, values] : params)          // std::vector<float>
  ///     arrays[name] = {values.data(), shapes[name]};
  ///   cellrt::Status status =
  ///       cell.initParams(arrays, seed, cellrt::InitScheme::fanIn());
  Status initParams(const std::map<std::string, MutableArray> &params,
                    uint64_t seed, const InitScheme &fallback) const;

  /// Stacks the plan's weights from `params` (shapes as in ForwardArgs;
  /// host arrays). For training calls, a bf16 cell also packs each weight
  /// for backward's state gradient (PackedWeights::backwardProduct): a
  /// decoder trained one step at a time would round every weight again at
  /// every step's backward.
  Expected<PackedWeights>
  packWeights(const std::map<std::string, ConstArray> &params,
              PackFor purpose = PackFor::Inference) const;

  /// The values the plan's dims take for these arguments (plan order), or
  /// the error forward() would report for their shapes.
  Expected<std::vector<int64_t>> bindDims(const ForwardArgs &args) const;

  /// For backends: a cell whose plan runs on `device` (cellrt/Device.h),
  /// e.g. cellrt::cuda::loadCell builds one on a GPU. Cell::load builds one
  /// on the CPU.
  static Expected<Cell> create(Plan plan, std::shared_ptr<Device> device,
                               std::vector<std::string> kernelNames = {});
  const Device &getDevice() const { return *device; }

private:
  Cell() = default;

  Plan plan;
  std::shared_ptr<Device> device;
  std::vector<std::string> kernelNames;
  /// Inference calls' executables (a shape's bound operations, schedule and
  /// device memory), kept for the next call (one per concurrent call) and
  /// freed with the last copy of this Cell.
  std::shared_ptr<detail::ExecutablePool> executables;
};

} // namespace cellrt

#endif // CELLRT_RUNTIME_H
