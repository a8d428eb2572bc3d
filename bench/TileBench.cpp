//===- TileBench.cpp - Gate math on GEMM tiles: the #16 experiment -------===//
//
// Issue #16, item 2, tried before the runtime is rebuilt around it: does
// applying the generated kernel to each GEMM output tile while it is in
// cache, with one team that lives for the whole sequence and meets once per
// step (started per run: ~0.1 ms of a run of tens of ms), beat cellrt's
// schedule (one GEMM call per product per step, then a kernel over the
// whole output)? Implementation `tiles`, forward, for every cell whose plan
// has one recurrent product per step (ATR, LSTM, LAU; GRU's second
// product reads the first's gate, so it needs two meetings per step):
//
//   XP[T*B, Gx*H] = X · W0ᵀ                  once, dnnl_sgemm (hoisted)
//   per step t, per block j of kBlock hidden units (a thread owns its
//   blocks for the whole sequence):
//     Q[B, G*kBlock] = h_t · W1[j]ᵀ          libxsmm; W1[j] holds the rows
//                                            of block j of each of the G
//                                            gates, packed once
//     the plan's step kernel on rows 0..B, with dims H := kBlock and every
//     argument moved to block j (gate g of Q at column g*kBlock): the
//     compiled kernel computes exactly that tile of the new states and of
//     the output
//   barrier
//
// The arguments are bound from the plan, so a cell qualifies when every
// argument of its step kernel is k*H wide at a column that is a multiple of
// H and the kernel needs no whole-row scratch (layer norm).
//
// `tiles-sgemm` is the same schedule with each tile's product on
// dnnl_sgemm (one OpenMP thread per member) instead of libxsmm: the control
// that separates the micro-kernel's speed from the schedule's.
//
// The constructor checks every step's output against cellrt's forward on the
// same data, so a fast wrong answer fails the workload.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include "cellrt/Runtime.h"
#include "runtime/SpinBarrier.h"

#include <libxsmm.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

using namespace cellc_bench;

namespace {

constexpr int64_t kBlock = 64;

/// Where a step-kernel argument points, bound once from the plan.
struct TileArg {
  cellrt::Ref::Kind kind;
  /// State index for State/Next; unused otherwise.
  int64_t index = 0;
  /// The argument's first column in its array; for the recurrent product,
  /// its gate's column within the tile (g * kBlock).
  int64_t column = 0;
  int64_t stride = 0;
  /// Param: its data.
  const float *param = nullptr;
};

/// The plan's forward operations, when they have the shape the tile
/// schedule needs: one hoisted input product, then per step one recurrent
/// product of a state and one kernel.
struct TilePlan {
  const cellrt::Operation *inputProduct = nullptr;
  const cellrt::Operation *stateProduct = nullptr;
  const cellrt::Operation *kernel = nullptr;
};

std::string findTilePlan(const cellrt::Plan &plan, TilePlan &found) {
  for (const cellrt::Operation &op : plan.operations) {
    if (cellrt::isBackward(op.phase))
      continue;
    bool gemm = op.kind == cellrt::Operation::Kind::Gemm;
    if (op.phase == cellrt::Phase::Pre && gemm && !found.inputProduct)
      found.inputProduct = &op;
    else if (op.phase == cellrt::Phase::Step && gemm && !found.stateProduct)
      found.stateProduct = &op;
    else if (op.phase == cellrt::Phase::Step && !gemm && !found.kernel)
      found.kernel = &op;
    else if (op.phase != cellrt::Phase::Scan)
      return "more-than-one-product-or-kernel-per-step";
  }
  if (!found.inputProduct || !found.stateProduct || !found.kernel)
    return "no-recurrent-product";
  if (found.stateProduct->gemmInput().kind != cellrt::Ref::Kind::State ||
      found.inputProduct->gemmInput().kind != cellrt::Ref::Kind::Input)
    return "products-read-other-values";
  if (plan.scratch.count(found.kernel->kernel))
    return "kernel-needs-whole-rows";
  return "";
}

class TileRunner : public Runner {
public:
  TileRunner(cellrt::Cell loaded, const cellrt_image &image,
             const Workload &w, bool onLibxsmm)
      : cell(std::move(loaded)), plan(cell.getPlan()), w(w),
        onLibxsmm(onLibxsmm), blocks(w.H / kBlock),
        lengths(w.B, int32_t(w.T)) {
    // The factory checked the plan; its operations live in `cell` now.
    if (!findTilePlan(plan, ops).empty())
      fail("tiles: the plan changed");
    dims = {{"H", w.H}, {"I", w.I}};
    makeData();
    bindKernelArgs();
    packRecurrentWeights();
    kernel = image.kernels[ops.kernel->kernel];
    for (const std::string &dim : plan.dims)
      tileDims.push_back(dim == "H" ? kBlock : dims.at(dim));
    libxsmm_init();
    const libxsmm_blasint m = gates * kBlock, n = w.B, k = w.H, lda = m,
                          ldb = w.H, ldc = m;
    const float alpha = 1, beta = 0;
    // No prefetch: a prefetching kernel would expect more than (a, b, c).
    const int flags = LIBXSMM_GEMM_FLAG_NONE, prefetch = LIBXSMM_PREFETCH_NONE;
    gemm = libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta,
                               &flags, &prefetch);
    if (!gemm)
      fail("libxsmm has no kernel for the tile GEMM");
    run();
    checkAgainstCellrt();
  }

  void run() override {
    if (dnnl_sgemm('N', 'T', w.T * w.B, xpWidth, w.I, 1.0f, x.data(), w.I,
                   w0.data(), w.I, 0.0f, xp.data(), xpWidth) != dnnl_success)
      fail("dnnl_sgemm failed");
    for (std::vector<float> &state : states[0])
      std::fill(state.begin(), state.end(), 0.0f);
    int team = w.threads;
    cellrt::detail::SpinBarrier barrier(team);
    std::vector<std::thread> others;
    for (int member = 1; member < team; ++member)
      others.emplace_back([&, member] { scan(member, team, barrier); });
    scan(0, team, barrier);
    for (std::thread &other : others)
      other.join();
  }

private:
  int64_t eval(const cellrt::DimExpr &expr) const {
    std::optional<int64_t> value = expr.evaluate(dims);
    if (!value)
      fail("cannot evaluate " + expr.str());
    return *value;
  }

  /// Random params (the stacked weights W0 and W1 are their rows in order),
  /// inputs and zero states.
  void makeData() {
    uint32_t seed = 1;
    float scale = 1.0f / std::sqrt(static_cast<float>(w.H));
    for (const cellrt::ParamDecl &param : plan.params) {
      int64_t count = 1;
      for (const cellrt::DimExpr &dim : param.shape)
        count *= eval(dim);
      params[param.name] = randomVector(count, scale, seed++);
    }
    w0 = stack(ops.inputProduct->weight);
    w1 = stack(ops.stateProduct->weight);
    xpWidth = int64_t(w0.size()) / w.I;
    gates = int64_t(w1.size()) / (w.H * w.H);
    x = randomVector(w.T * w.B * w.I, 1.0f, seed++);
    xp.assign(w.T * w.B * xpWidth, 0.0f);
    outWidth = eval(plan.kernelOutputWidth());
    out.assign(w.T * w.B * outWidth, 0.0f);
    for (auto &side : states)
      for (const cellrt::VectorDecl &state : plan.states)
        side.push_back(std::vector<float>(w.B * eval(state.length), 0.0f));
    recurrentState = plan.stateIndex(ops.stateProduct->gemmInput().name);
  }

  std::vector<float> stack(const std::string &weight) const {
    std::vector<float> rows;
    for (const std::string &name : plan.findWeight(weight)->params)
      rows.insert(rows.end(), params.at(name).begin(), params.at(name).end());
    return rows;
  }

  /// Each kernel argument as (array, column, row stride); fails where the
  /// tile schedule cannot move it to a block of hidden units.
  void bindKernelArgs() {
    using Kind = cellrt::Ref::Kind;
    const std::string &product = ops.stateProduct->gemmOutput().name;
    for (const cellrt::Ref &ref : ops.kernel->operands) {
      TileArg arg{ref.kind};
      arg.column = eval(ref.column);
      int64_t width = eval(plan.arrayWidth(ref));
      arg.stride = width;
      if (width % w.H || arg.column % w.H)
        fail("tiles: argument " + ref.str() + " is not k*H wide at k*H");
      if (ref.kind == Kind::State || ref.kind == Kind::Next)
        arg.index = plan.stateIndex(ref.name);
      else if (ref.kind == Kind::Param) {
        arg.param = params.at(ref.name).data();
        arg.stride = 0;
      } else if (ref.kind == Kind::Step && ref.name == product) {
        arg.column = arg.column / w.H * kBlock;
        arg.stride = gates * kBlock;
      } else if (ref.kind == Kind::Seq &&
                 ref.name != ops.inputProduct->gemmOutput().name)
        fail("tiles: the kernel reads a buffer other than the products");
      else if (ref.kind != Kind::Seq && ref.kind != Kind::Out &&
               ref.kind != Kind::Input)
        fail("tiles: unexpected kernel argument " + ref.str());
      args.push_back(arg);
    }
  }

  /// W1's rows of block j of each gate as libxsmm's column-major A operand:
  /// packed[j][k * G*kBlock + g*kBlock + n] = W1[g*H + j*kBlock + n][k].
  void packRecurrentWeights() {
    if (w.H % kBlock)
      fail("H must be a multiple of the tile width");
    int64_t m = gates * kBlock;
    packed.assign(w1.size(), 0.0f);
    for (int64_t j = 0; j < blocks; ++j)
      for (int64_t k = 0; k < w.H; ++k)
        for (int64_t g = 0; g < gates; ++g)
          for (int64_t n = 0; n < kBlock; ++n)
            packed[(j * w.H + k) * m + g * kBlock + n] =
                w1[(g * w.H + j * kBlock + n) * w.H + k];
  }

  /// Q[B, G*kBlock] = h · (block j's rows of W1)ᵀ.
  void tileProduct(int64_t j, const float *h, float *q) const {
    int64_t m = gates * kBlock;
    if (onLibxsmm) {
      gemm(packed.data() + j * w.H * m, h, q);
      return;
    }
    // dnnl_sgemm reads block j's rows of each gate in place.
    for (int64_t g = 0; g < gates; ++g)
      if (dnnl_sgemm('N', 'T', w.B, kBlock, w.H, 1.0f, h, w.H,
                     w1.data() + (g * w.H + j * kBlock) * w.H, w.H, 0.0f,
                     q + g * kBlock, m) != dnnl_success)
        fail("dnnl_sgemm failed");
  }

  float *pointer(const TileArg &arg, int64_t t, int64_t column, float *q) {
    using Kind = cellrt::Ref::Kind;
    int64_t at = arg.column + column;
    switch (arg.kind) {
    case Kind::State:
      return states[t % 2][arg.index].data() + at;
    case Kind::Next:
      return states[(t + 1) % 2][arg.index].data() + at;
    case Kind::Param:
      return const_cast<float *>(arg.param) + at;
    case Kind::Step:
      return q + arg.column;
    case Kind::Seq:
      return xp.data() + t * w.B * xpWidth + at;
    case Kind::Input:
      return x.data() + t * w.B * w.I + at;
    default:
      return out.data() + t * w.B * outWidth + at;
    }
  }

  void scan(int member, int team, cellrt::detail::SpinBarrier &barrier) {
    // One OpenMP thread per member's GEMMs: two members must not each start
    // a team of two.
    if (!onLibxsmm && team > 1)
      setOmpTeamSize(1);
    std::vector<float> q(w.B * gates * kBlock);
    std::vector<float *> ptrs(args.size());
    std::vector<int64_t> strides;
    for (const TileArg &arg : args)
      strides.push_back(arg.stride);
    int64_t first = blocks * member / team, last = blocks * (member + 1) / team;
    for (int64_t t = 0; t < w.T; ++t) {
      const float *h = states[t % 2][recurrentState].data();
      for (int64_t j = first; j < last; ++j) {
        tileProduct(j, h, q.data());
        for (size_t a = 0; a < args.size(); ++a)
          ptrs[a] = pointer(args[a], t, j * kBlock, q.data());
        kernel(0, w.B, t, lengths.data(), tileDims.data(), ptrs.data(),
               strides.data());
      }
      barrier.wait();
    }
  }

  /// cellrt's forward on the same params and inputs, against `out`.
  void checkAgainstCellrt() const {
    cellrt::ForwardArgs forward;
    for (const cellrt::ParamDecl &param : plan.params) {
      std::vector<int64_t> shape;
      for (const cellrt::DimExpr &dim : param.shape)
        shape.push_back(eval(dim));
      forward.params[param.name] = {params.at(param.name).data(), shape};
    }
    forward.inputs.push_back({x.data(), {w.T, w.B, w.I}});
    forward.lengths = lengths.data();
    std::vector<float> expected(out.size());
    forward.output = {expected.data(), {w.T, w.B, outWidth}};
    cellrt::Status status = cell.forward(forward);
    if (!status.ok())
      fail("cellrt forward: " + status.message());
    double worst = 0;
    for (size_t i = 0; i < out.size(); ++i)
      worst = std::max(worst, double(std::fabs(out[i] - expected[i])) /
                                  std::max(1.0, double(std::fabs(expected[i]))));
    if (!(worst < 1e-4))
      fail("tiles: output differs from cellrt's by " + std::to_string(worst));
  }

  cellrt::Cell cell;
  const cellrt::Plan &plan;
  TilePlan ops;
  Workload w;
  bool onLibxsmm;
  int64_t blocks, gates = 0, xpWidth = 0, outWidth = 0, recurrentState = 0;
  std::map<std::string, int64_t> dims;
  std::vector<int64_t> tileDims;
  std::vector<int32_t> lengths;
  std::map<std::string, std::vector<float>> params;
  std::vector<float> w0, w1, packed, x, xp, out;
  std::vector<std::vector<float>> states[2];
  std::vector<TileArg> args;
  cellrt_kernel_fn kernel = nullptr;
  libxsmm_smmfunction gemm = nullptr;
};

Factory tilesOn(bool onLibxsmm) {
  return [onLibxsmm](const Workload &w,
                     std::string &why) -> std::unique_ptr<Runner> {
    // The check runs cellrt's default schedule.
    setenv("CELLRT_TILED_STEPS", "0", 1);
    cellrt_image image;
    if (w.mode != Mode::Forward || !cellImage(w.cell, image)) {
      why = "the-tile-experiment-covers-forward-of-atr-lstm-lau";
      return nullptr;
    }
    cellrt::Expected<cellrt::Cell> cell = cellrt::Cell::load(image);
    if (!cell)
      fail("cannot load " + w.cell + ": " + cell.error());
    TilePlan ops;
    why = findTilePlan(cell->getPlan(), ops);
    if (!why.empty())
      return nullptr;
    return std::make_unique<TileRunner>(std::move(*cell), image, w,
                                        onLibxsmm);
  };
}

Register libxsmmTiles({"tiles", tilesOn(true),
                       [](int threads) { setOmpThreads(threads); },
                       prewarmSgemm});
Register sgemmTiles({"tiles-sgemm", tilesOn(false),
                     [](int threads) { setOmpThreads(threads); },
                     prewarmSgemm});

} // namespace
