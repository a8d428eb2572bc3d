//===- ExecutionTiled.cpp - A call's steps as tiles -----------------------===//
//
// Whether a call's steps can run as the tiled steps (TiledSteps.h), and
// their description: each product, accumulation and kernel of a step moved
// to a block of hidden units; for a scan cell's decoding step, its
// products of inputs alone.
//
//===----------------------------------------------------------------------===//

#include "Execution.h"

using namespace cellrt;

namespace cellrt::detail {

/// Whether this call's steps can run as tiles (TiledSteps.h): on the CPU,
/// steps of products and kernels without whole-row scratch; each product
/// reads [B, H] rows of a state or of a buffer an earlier kernel wrote by a
/// stacked [G*H, H] weight (backward: [B, rows] by [rows, H] into a state
/// gradient or a buffer), or in inference a step's [B, I] rows of an input
/// by a stacked [G*H, I] weight (describeInputProducts), and every kernel
/// argument is H wide per row (a state, a gradient, a param, the output,
/// an input) or one H-wide gate of a stacked buffer.
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

/// Whether a call of one or two steps (a decoding step) gains from tiles:
/// the team's set-up costs a few µs per call, which a step's products must
/// outweigh. Decoding steps, µs, GRU and LSTM at I = H, untiled → tiled
/// (bench/README.md): H = 512, B = 10, 2 threads, 316 → 157 and 358 → 208
/// (each member's panels stay in its core's cache); 1 thread 308 → 297 and
/// 412 → 400; H = 128, B = 1, 1 thread, 7.0 → 10.7 and 8.6 → 10.4; H = 64,
/// B = 10, 12.4 → 10.9 and 13.7 → 12.7. Hence a floor on the multiply-adds
/// of the step's products (inputs' included).
bool Execution::shortCallTiles() const {
  constexpr int64_t kMinStepMultiplyAdds = int64_t(1) << 18;
  int64_t perRow = 0;
  for (const BoundList *list : {&sequenceOperations, &stepOperations})
    for (const BoundOperation &bound : *list)
      if (bound.op->kind == Operation::Kind::Gemm)
        perRow += bound.weightRows * bound.weightCols;
  return perRow * rowsPerStep >= kMinStepMultiplyAdds;
}

bool Execution::tilesPay() const {
  // Without the caller's PackedWeights the weights are packed into panels
  // per call: a decoding step would pay a pass over them for one product.
  // With them the panels are packed once, and a step tiles too where its
  // products are large enough (shortCallTiles).
  constexpr int64_t kMinTiledSteps = 3;
  int64_t minSteps =
      usesPackedWeights() && shared && !training ? 1 : kMinTiledSteps;
  if (!tiledStepsWanted(training) || maxLength < minSteps)
    return false;
  return maxLength >= kMinTiledSteps || shortCallTiles();
}

bool Execution::describeTiledSteps(TiledSteps &tiled, bool backwardPass) const {
  auto *host = dynamic_cast<HostDevice *>(&device);
  // bf16 plans tile too, on libxsmm's bf16 kernels (TiledSteps::bf16).
  if (!host || plan.states.empty() ||
      std::none_of(stepOperations.begin(), stepOperations.end(),
                   [](const BoundOperation &bound) {
                     return bound.op->kind == Operation::Kind::Gemm;
                   }))
    return false;
  if (!describeHiddenBlocks(tiled) || !eachSegmentIsAnArgument(tiled.hiddenDim))
    return false;
  std::map<std::string, int64_t> productPhase;
  if (!training && !backwardPass)
    describeInputProducts(productPhase, tiled);
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
  describeCallShape(tiled, backwardPass);
  refreshTiledSteps(tiled);
  return true;
}

void Execution::refreshTiledSteps(TiledSteps &tiled) const {
  // Training's tiled steps pack their own panels per call, as before
  // packed weights reached training.
  PackedPanels *panels =
      usesPackedWeights() && !training ? args.packedWeights->panels() : nullptr;
  for (TiledPhase &phase : tiled.phases)
    if (phase.kind != TiledPhase::Kind::Kernel) {
      phase.weight = work.weights[phase.weightIndex];
      phase.panels = panels;
    }
  tiled.lengths = work.lengths;
  tiled.steps = maxLength;
  tiled.slots[0] = work.currentStates;
  tiled.slots[1] = work.nextStates;
  tiled.slots[2] = grads.dnext;
  tiled.slots[3] = grads.dstate;
}

/// The hidden dim the blocks split: the first state's length, one symbol
/// of the dims, and every state as wide.
bool Execution::describeHiddenBlocks(TiledSteps &tiled) const {
  if (plan.states.empty())
    return false;
  const DimExpr &length = plan.states[0].length;
  if (length.getTerms().size() != 1)
    return false;
  tiled.hiddenDim = length.getTerms()[0].first;
  for (const VectorDecl &state : plan.states)
    if (multipleOf(state.length, tiled.hiddenDim) != 1)
      return false;
  tiled.hidden = sizes.eval(length);
  tiled.block = tiledBlock(tiled.hidden);
  return tiled.block != 0;
}

/// The call's steps, rows, dims (the hidden one a block) and
/// double-buffered arrays.
void Execution::describeCallShape(TiledSteps &tiled, bool backwardPass) const {
  for (size_t i = 0; i < plan.dims.size(); ++i)
    tiled.dims.push_back(plan.dims[i] == tiled.hiddenDim ? tiled.block
                                                         : dimValues[i]);
  tiled.bf16 = device.precision() == Precision::BF16;
  tiled.batch = rowsPerStep;
  tiled.reverse = backwardPass;
  tiled.zeroOutgoing = backwardPass;
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

/// The weight of a product as the tiled steps multiply by it: stacked
/// params of k*H rows each (G*H rows in all: `phase.gates` = G) and, where
/// `hiddenDepth`, H columns. False for any other weight.
bool Execution::describeTiledWeight(const BoundOperation &bound,
                                    const std::string &hidden, bool hiddenDepth,
                                    TiledPhase &phase) const {
  int64_t gates = 0;
  for (const std::string &name : plan.findWeight(bound.op->weight)->params) {
    const ParamDecl *param = plan.findParam(name);
    int64_t rows = multipleOf(param->shape[0], hidden);
    if (rows < 1 || (hiddenDepth && multipleOf(param->shape[1], hidden) != 1))
      return false;
    gates += rows;
  }
  phase.weightIndex = bound.weightIndex;
  phase.weightRows = bound.weightRows;
  phase.depth = bound.weightCols;
  phase.gates = gates;
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
  if (!describeTiledWeight(bound, hidden, /*hiddenDepth=*/true, phase))
    return false;
  int64_t gates = phase.gates;
  const Ref &in = bound.op->gemmInput(), &out = bound.op->gemmOutput();
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

/// Inference: each product of an input (`pre gemm seq:V W input:X`, W of
/// [k*H, I] params) whose result only step kernels read becomes a product
/// of the step's rows of X, per block into the member's tile, which the
/// kernels read while it is in cache. One product over every step instead
/// writes [T*B, k*H] that the kernels stream back from memory: LSTM forward
/// at 1 thread ran ~9% faster this way (bench/README.md).
void Execution::describeInputProducts(
    std::map<std::string, int64_t> &productPhase, TiledSteps &tiled) const {
  for (const BoundOperation &bound : sequenceOperations) {
    TiledPhase phase;
    if (!describeInputProduct(bound, tiled.hiddenDim, phase) ||
        !onlyStepKernelsRead(bound))
      continue;
    phase.intoTile = true;
    productPhase[bound.op->gemmOutput().name] = int64_t(tiled.phases.size());
    tiled.phases.push_back(std::move(phase));
    tiled.absorbed.push_back(&bound);
  }
}

/// A sequence operation as a product of a step's rows of an input by a
/// weight of [k*H, I] params into a k*H wide buffer (from its column 0),
/// block by block: `phase` reads the step's rows of the input; the caller
/// decides where the block's columns go.
bool Execution::describeInputProduct(const BoundOperation &bound,
                                     const std::string &hidden,
                                     TiledPhase &phase) const {
  const Operation &op = *bound.op;
  if (op.phase != Phase::Pre || op.kind != Operation::Kind::Gemm)
    return false;
  const Ref &in = op.gemmInput(), &out = op.gemmOutput();
  if (in.kind != Ref::Kind::Input || out.kind != Ref::Kind::Seq ||
      multipleOf(in.column, hidden) != 0 || multipleOf(out.column, hidden) != 0)
    return false;
  // bf16 kernels read the weight in pairs of its columns (VNNI).
  if (!describeTiledWeight(bound, hidden, /*hiddenDepth=*/false, phase) ||
      (device.precision() == Precision::BF16 && phase.depth % 2 != 0) ||
      multipleOf(plan.arrayWidth(out), hidden) != phase.gates ||
      !describeTiledArg(in, bound.operands[1], {}, phase.in))
    return false;
  phase.kind = TiledPhase::Kind::Product;
  // Bound for all rows at once; the phase reads a step's.
  phase.in.stepAdvance = rowsPerStep * phase.in.stride;
  return true;
}

/// A decoding step of a scan cell (no recurrent product: SRU, SR-NMT) as
/// the tiled steps' products alone: each member multiplies the step's rows
/// of the input by its own blocks of the weight (the same blocks every
/// call, panels kept in PackedWeights) into the product's buffer, and the
/// scan kernel then runs as before. The product is the step's whole cost
/// and reads 3.1 MB of weights at H = 512; oneDNN's matmul runs one of
/// under 16 MFLOP on the calling thread (kMinSharedPackedFlops), so the
/// step used one core at 2 threads (bench/README.md, "Scan cells' steps").
/// Only where every sequence operation is such a product, and the longest
/// row runs every step: the products run maxLength steps of every row, and
/// the scan reads all T.
bool Execution::scanTilesPay() const {
  return !training && shared && usesPackedWeights() &&
         tiledStepsWanted(/*training=*/false) && maxLength == sizes.steps &&
         maxLength <= 2;
}

bool Execution::describeScanProducts(TiledSteps &tiled) const {
  auto *host = dynamic_cast<HostDevice *>(&device);
  if (!host || sequenceOperations.empty() || !shortCallTiles() ||
      !describeHiddenBlocks(tiled))
    return false;
  for (const BoundOperation &bound : sequenceOperations) {
    TiledPhase phase;
    if (!describeInputProduct(bound, tiled.hiddenDim, phase) ||
        !describeTiledArg(bound.op->gemmOutput(), bound.operands[0], {},
                          phase.out))
      return false;
    phase.out.stepAdvance = rowsPerStep * phase.out.stride;
    tiled.phases.push_back(std::move(phase));
    tiled.absorbed.push_back(&bound);
  }
  describeCallShape(tiled, /*backwardPass=*/false);
  refreshTiledSteps(tiled);
  return true;
}

/// Whether step kernels are the only readers of a sequence product's
/// buffer.
bool Execution::onlyStepKernelsRead(const BoundOperation &product) const {
  const std::string &name = product.op->gemmOutput().name;
  for (const BoundList *list :
       {&sequenceOperations, &stepOperations, &endOperations, &scanOperations})
    for (const BoundOperation &bound : *list) {
      if (&bound == &product || (list == &stepOperations &&
                                 bound.op->kind == Operation::Kind::Kernel))
        continue;
      for (const Ref &ref : bound.op->operands)
        if (ref.kind == Ref::Kind::Seq && ref.name == name)
          return false;
    }
  return true;
}

/// A product's operand as whole rows: a state or state gradient (double
/// buffered in inference and backward, a history in training) or a buffer;
/// never an inference product tile, which exists per block only.
bool Execution::tiledRows(const Ref &ref, const Operand &operand,
                          const std::map<std::string, int64_t> &productPhase,
                          TiledArg &arg) const {
  if ((ref.kind == Ref::Kind::Step || ref.kind == Ref::Kind::Seq) &&
      productPhase.count(ref.name))
    return false;
  return describeTiledArg(ref, operand, productPhase, arg) &&
         arg.kind != TiledArg::Kind::Product;
}

bool Execution::describeTiledKernel(
    const BoundOperation &bound, const HostDevice &host,
    const std::map<std::string, int64_t> &productPhase, const TiledSteps &tiled,
    TiledPhase &phase) const {
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
  if (ref.kind == Ref::Kind::Step || ref.kind == Ref::Kind::Seq) {
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
  // The call's own arrays are read through the executable's entries, so a
  // description outlives the call that made it.
  if (operand.array) {
    arg.array = operand.array;
    arg.column = operand.column;
  } else {
    arg.base = operand.base;
  }
  arg.stepAdvance = operand.stepAdvance;
  return true;
}

} // namespace cellrt::detail
