//===- TiledSteps.cpp - Gate math on the recurrent products' tiles --------===//

#include "TiledSteps.h"

#include "Gemm.h"
#include "Parallel.h"
#include "SpinBarrier.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>

#ifdef CELLRT_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

using namespace cellrt;
using namespace cellrt::detail;

namespace {

std::atomic<int64_t> tiledCalls{0}, tiledFailures{0}, panelPacks{0},
    prefetchingCalls{0};

#ifdef CELLRT_HAVE_LIBXSMM
void initializeLibxsmm() {
  static std::once_flag initialized;
  std::call_once(initialized, [] { libxsmm_init(); });
}

/// C (m x n, column-major) = A (m x k) · B (k x n) (+ C where `accumulate`),
/// libxsmm's JIT kernel for that shape; with `prefetch` (a
/// libxsmm_gemm_prefetch_type) the kernel takes (a, b, c, pa, pb, pc).
libxsmm_smmfunction dispatch(int64_t m, int64_t n, int64_t k, int64_t lda,
                             int64_t ldb, int64_t ldc, bool accumulate,
                             int prefetch = LIBXSMM_GEMM_PREFETCH_NONE) {
  initializeLibxsmm();
  const libxsmm_blasint M = m, N = n, K = k, LDA = lda, LDB = ldb, LDC = ldc;
  const float alpha = 1, beta = accumulate ? 1 : 0;
  const int flags = LIBXSMM_GEMM_FLAG_NONE;
  return libxsmm_smmdispatch(M, N, K, &LDA, &LDB, &LDC, &alpha, &beta, &flags,
                             &prefetch);
}

/// dispatch's product with A and B in bfloat16, summed in f32 (a plan in
/// bf16 precision): A in VNNI pairs (toVnniPairs), B [n][k] column-major.
/// On CPUs with AVX512_BF16, libxsmm's kernel multiplies at about twice
/// the f32 kernel's rate (32x64x512: 232 against 117 GFLOP/s on the AMD
/// EPYC of bench/README.md, "bf16 tiles").
libxsmm_bsmmfunction dispatchBf16(int64_t m, int64_t n, int64_t k, int64_t lda,
                                  int64_t ldb, int64_t ldc, bool accumulate) {
  initializeLibxsmm();
  const libxsmm_blasint M = m, N = n, K = k, LDA = lda, LDB = ldb, LDC = ldc;
  const float alpha = 1, beta = accumulate ? 1 : 0;
  const int flags = LIBXSMM_GEMM_FLAG_VNNI_A,
            prefetch = LIBXSMM_GEMM_PREFETCH_NONE;
  return libxsmm_bsmmdispatch(M, N, K, &LDA, &LDB, &LDC, &alpha, &beta, &flags,
                              &prefetch);
}

/// `panels` f32 panels of [depth][panel] (column-major panel x depth) as
/// bfloat16 in VNNI pairs, the layout libxsmm's bf16 kernels read: element
/// (k, n) at ((k / 2) * panel + n) * 2 + k % 2. `depth` is even.
void toVnniPairs(const float *f32, int64_t panels, int64_t depth, int64_t panel,
                 uint16_t *target) {
  std::vector<uint16_t> rounded(depth * panel);
  for (int64_t p = 0; p < panels; ++p) {
    roundToBf16(f32 + p * depth * panel, depth, panel, panel, rounded.data());
    uint16_t *to = target + p * depth * panel;
    for (int64_t k = 0; k < depth; ++k)
      for (int64_t n = 0; n < panel; ++n)
        to[((k / 2) * panel + n) * 2 + k % 2] = rounded[k * panel + n];
  }
}

/// The widest panel of a block: a product's micro-kernel writes `panel`
/// columns of its tile per call, reading its part of the weight as one
/// contiguous [K][panel] stream. oneDNN's RNN kernels use panels of 32
/// (its abdEc32e layout); libxsmm's kernel over a whole block, whose weight
/// rows lie gates * block floats apart, ran LSTM's recurrent product ~10%
/// slower (bench/README.md).
constexpr int64_t kPanel = 32;

/// The fewest rows a team of one multiplies with prefetching kernels
/// (Member::prefetch).
constexpr int64_t kMinPrefetchRows = 32;

/// A phase's micro-kernel and its weight packed per block, in panels of
/// `panel` columns, each [depth][panel] column-major. Product: column c of
/// block j (c = g*block + u) is row g*H + j*block + u of W, depth H;
/// Accumulate: column c is column j*block + c of W, depth `weightRows`.
struct PhaseGemm {
  libxsmm_smmfunction gemm = nullptr;
  /// The panels: `packed`, or the caller's PackedWeights' copy.
  const float *panels = nullptr;
  std::vector<float> packed;
  /// In bf16 (TiledSteps::bf16) instead: the kernel, the panels in VNNI
  /// pairs, and the copy packed here.
  libxsmm_bsmmfunction bf16Gemm = nullptr;
  const uint16_t *bf16Panels = nullptr;
  std::vector<uint16_t> bf16Packed;
  /// Whether the members pack `packed` (their own blocks each).
  bool packs = false;
  /// Product: the same kernel prefetching the next panel into L2 as it
  /// multiplies (LIBXSMM_GEMM_PREFETCH_AL2; Member::prefetch says when).
  libxsmm_smmfunction prefetching = nullptr;
  /// Elements (floats, or bf16 values) per block of the panels.
  int64_t blockElements = 0, panel = 0, depth = 0;

  /// c = the panel `offset` elements into the panels · `in` (whole rows,
  /// f32 or, in bf16, Member::input's copy).
  void multiply(int64_t offset, const void *in, float *c,
                bool prefetchNext) const {
    if (bf16Gemm) {
      bf16Gemm(reinterpret_cast<const libxsmm_bfloat16 *>(bf16Panels + offset),
               static_cast<const libxsmm_bfloat16 *>(in), c);
      return;
    }
    const float *a = panels + offset, *b = static_cast<const float *>(in);
    if (prefetchNext && prefetching)
      prefetching(a, b, c, a + depth * panel, b, c);
    else
      gemm(a, b, c);
  }
};

/// Block j of a phase's weight as f32 panels into `a`.
void packBlockF32(const TiledSteps &s, const TiledPhase &phase, int64_t j,
                  const PhaseGemm &target, float *a) {
  int64_t panel = target.panel, depth = target.depth;
  if (phase.kind == TiledPhase::Kind::Product) {
    // A transpose in tiles of kTile weight columns: each tile's kTile
    // packed rows stay in cache while the panel's weight rows fill them.
    constexpr int64_t kTile = 16;
    for (int64_t c0 = 0; c0 < phase.gates * s.block; c0 += panel, a += depth * panel) {
      int64_t g = c0 / s.block, u0 = c0 % s.block;
      const float *rows = phase.weight + (g * s.hidden + j * s.block + u0) * depth;
      for (int64_t k0 = 0; k0 < depth; k0 += kTile) {
        int64_t k1 = std::min(k0 + kTile, depth);
        for (int64_t n = 0; n < panel; ++n)
          for (int64_t k = k0; k < k1; ++k)
            a[k * panel + n] = rows[n * depth + k];
      }
    }
    return;
  }
  for (int64_t c0 = 0; c0 < s.block; c0 += panel, a += depth * panel)
    for (int64_t k = 0; k < depth; ++k)
      std::memcpy(a + k * panel, phase.weight + k * s.hidden + j * s.block + c0,
                  panel * sizeof(float));
}

/// Block j of a phase's weight into the panels the call packs.
void packBlock(const TiledSteps &s, const TiledPhase &phase, int64_t j,
               PhaseGemm &target) {
  if (!s.bf16) {
    packBlockF32(s, phase, j, target,
                 target.packed.data() + j * target.blockElements);
    return;
  }
  std::vector<float> block(target.blockElements);
  packBlockF32(s, phase, j, target, block.data());
  toVnniPairs(block.data(),
              target.blockElements / (target.depth * target.panel),
              target.depth, target.panel,
              target.bf16Packed.data() + j * target.blockElements);
}

std::tuple<int64_t, int64_t, int64_t> panelKey(const TiledSteps &s,
                                               const TiledPhase &phase,
                                               const PhaseGemm &target) {
  return {phase.weightIndex, s.block, target.panel};
}

/// The panels of a phase (f32 or bf16: `kept` names the PackedPanels map
/// of that precision): the caller's PackedWeights' copy where it holds one
/// of this size, else `own`, sized for the members to pack.
template <typename Element>
const Element *keptOrPacked(
    const TiledSteps &s, const TiledPhase &phase, PhaseGemm &target,
    std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<Element>>
        PackedPanels::*kept,
    std::vector<Element> &own) {
  int64_t elements = s.hidden / s.block * target.blockElements;
  if (phase.panels) {
    std::lock_guard<std::mutex> lock(phase.panels->mutex);
    auto &map = phase.panels->*kept;
    auto found = map.find(panelKey(s, phase, target));
    // The size guards against a PackedWeights of another cell's plan.
    if (found != map.end() && int64_t(found->second.size()) == elements)
      return found->second.data();
  }
  own.resize(elements);
  target.packs = true;
  panelPacks.fetch_add(1);
  return own.data();
}

/// preparePhase in bf16: the kernel reads Member::input's copy of the rows
/// (`depth` apart), and the panels are kept apart from f32 ones.
Status prepareBf16Phase(const TiledSteps &s, const TiledPhase &phase,
                        PhaseGemm &target, int64_t ldc) {
  bool accumulate = phase.kind == TiledPhase::Kind::Accumulate;
  if (target.depth % 2 == 0)
    target.bf16Gemm = dispatchBf16(target.panel, s.batch, target.depth,
                                   target.panel, target.depth, ldc, accumulate);
  if (!target.bf16Gemm)
    return Status::error("libxsmm has no bf16 kernel for a tiled product of " +
                         std::to_string(s.batch) + " rows and depth " +
                         std::to_string(target.depth));
  return Status::success();
}

/// Where a prepared phase reads its panels in this run: the caller's
/// PackedWeights' copy where it holds one, else the phase's own, which the
/// members pack from the run's weight.
void placePanels(const TiledSteps &s, const TiledPhase &phase,
                 PhaseGemm &target) {
  if (phase.kind == TiledPhase::Kind::Kernel)
    return;
  target.packs = false;
  if (s.bf16)
    target.bf16Panels = keptOrPacked(
        s, phase, target, &PackedPanels::packedBf16, target.bf16Packed);
  else
    target.panels =
        keptOrPacked(s, phase, target, &PackedPanels::packed, target.packed);
}

Status preparePhase(const TiledSteps &s, const TiledPhase &phase,
                    PhaseGemm &target) {
  if (phase.kind == TiledPhase::Kind::Kernel)
    return Status::success();
  target.panel = std::min(kPanel, s.block);
  // A panel must not straddle two gates (tiledBlock's blocks are 64, 32,
  // 16 or 8 wide).
  if (s.block % target.panel != 0)
    return Status::error("a tiled block of " + std::to_string(s.block) +
                         " columns does not split into panels of " +
                         std::to_string(target.panel));
  bool accumulate = phase.kind == TiledPhase::Kind::Accumulate;
  target.depth = accumulate ? phase.weightRows : phase.depth;
  target.blockElements =
      target.depth * (accumulate ? 1 : phase.gates) * s.block;
  int64_t ldc = phase.intoTile ? phase.gates * s.block : phase.out.stride;
  if (s.bf16)
    return prepareBf16Phase(s, phase, target, ldc);
  target.gemm = dispatch(target.panel, s.batch, target.depth, target.panel,
                         phase.in.stride, ldc, accumulate);
  if (!accumulate && s.batch >= kMinPrefetchRows)
    target.prefetching =
        dispatch(target.panel, s.batch, target.depth, target.panel,
                 phase.in.stride, ldc, false, LIBXSMM_GEMM_PREFETCH_AL2);
  if (!target.gemm)
    return Status::error("libxsmm has no kernel for a tiled product of " +
                         std::to_string(s.batch) + " rows");
  return Status::success();
}

/// Hands the panels a call packed to the caller's PackedWeights, unless a
/// concurrent call was first.
void keepPanels(const TiledSteps &s, const TiledPhase &phase,
                PhaseGemm &target) {
  if (!phase.panels || !target.packs)
    return;
  std::lock_guard<std::mutex> lock(phase.panels->mutex);
  if (s.bf16)
    phase.panels->packedBf16.try_emplace(panelKey(s, phase, target),
                                         std::move(target.bf16Packed));
  else
    phase.panels->packed.try_emplace(panelKey(s, phase, target),
                                     std::move(target.packed));
}

/// One member's share: blocks [first, last) of every phase of every step.
class Member {
public:
  Member(const TiledSteps &s, std::vector<PhaseGemm> &gemms, int64_t first,
         int64_t last)
      : s(s), gemms(gemms), first(first), last(last) {
    for (size_t p = 0; p < s.phases.size(); ++p) {
      const TiledPhase &phase = s.phases[p];
      // Each block's product tiles live until the step ends: a later kernel
      // may read an earlier product's gates (GRU's z).
      products.emplace_back(phase.intoTile ? (last - first) * s.batch *
                                                 phase.gates * s.block
                                           : 0);
      std::vector<int64_t> phaseStrides;
      for (const TiledArg &arg : phase.args)
        phaseStrides.push_back(arg.kind == TiledArg::Kind::Product
                                   ? s.phases[arg.phase].gates * s.block
                                   : arg.stride);
      strides.push_back(std::move(phaseStrides));
      pointers.emplace_back(phase.args.size());
      bool multiplies = phase.kind != TiledPhase::Kind::Kernel;
      roundedRows.emplace_back(s.bf16 && multiplies ? s.batch * gemms[p].depth
                                                    : 0);
      roundedAt.push_back(0);
    }
    // A product reads whole rows: the team meets before one that may read
    // rows an earlier phase of the step wrote (a kernel, or a product into
    // a buffer), never before products of inputs into tiles.
    bool rowsWritten = false;
    for (const TiledPhase &phase : s.phases) {
      meetsFirst.push_back(rowsWritten &&
                           phase.kind != TiledPhase::Kind::Kernel);
      rowsWritten |= phase.kind == TiledPhase::Kind::Kernel || !phase.intoTile;
    }
  }

  bool covers(int64_t from, int64_t to) const {
    return first == from && last == to;
  }

  /// Runs every step of the description as it is now (its arrays, weights
  /// and steps may have changed since the last run).
  void run(SpinBarrier &barrier, bool prefetchPanels) {
    prefetch = prefetchPanels;
    for (int pair = 0; pair < 4; ++pair)
      slots[pair] = s.slots[pair];
    std::fill(roundedAt.begin(), roundedAt.end(),
              std::numeric_limits<int64_t>::min());
    // A member packs, and later reads, only its own blocks.
    for (size_t p = 0; p < s.phases.size(); ++p)
      if (gemms[p].packs)
        for (int64_t j = first; j < last; ++j)
          packBlock(s, s.phases[p], j, gemms[p]);
    for (int64_t i = 0; i < s.steps; ++i) {
      int64_t step = s.reverse ? s.steps - 1 - i : i;
      if (s.zeroOutgoing)
        zeroOutgoing();
      for (size_t begin = 0; begin < s.phases.size();) {
        size_t end = begin + 1;
        while (end < s.phases.size() && !meetsFirst[end])
          ++end;
        if (meetsFirst[begin])
          barrier.wait();
        for (int64_t j = first; j < last; ++j)
          for (size_t p = begin; p < end; ++p)
            runPhase(p, step, j);
        begin = end;
      }
      barrier.wait();
      std::swap(slots[0], slots[1]);
      std::swap(slots[2], slots[3]);
    }
  }

private:
  void zeroOutgoing() {
    for (float *gradient : slots[3])
      for (int64_t b = 0; b < s.batch; ++b)
        std::memset(gradient + b * s.hidden + first * s.block, 0,
                    (last - first) * s.block * sizeof(float));
  }

  void runPhase(size_t p, int64_t step, int64_t j) {
    const TiledPhase &phase = s.phases[p];
    switch (phase.kind) {
    case TiledPhase::Kind::Kernel: {
      std::vector<float *> &bound = pointers[p];
      for (size_t a = 0; a < phase.args.size(); ++a)
        bound[a] = at(phase.args[a], step, j);
      phase.kernel(0, s.batch, step, s.lengths, s.dims.data(), bound.data(),
                   strides[p].data());
      return;
    }
    case TiledPhase::Kind::Product: {
      const PhaseGemm &gemm = gemms[p];
      const void *in = input(p, step);
      int64_t columns = phase.gates * s.block;
      for (int64_t c0 = 0; c0 < columns; c0 += gemm.panel) {
        // Column c0 of the block: gate c0 / block, unit c0 % block.
        float *c = phase.intoTile ? product(p, j) + c0
                                  : rows(phase.out, step) +
                                        (c0 / s.block) * s.hidden +
                                        j * s.block + c0 % s.block;
        gemm.multiply(j * gemm.blockElements + c0 * gemm.depth, in, c,
                      prefetch);
      }
      return;
    }
    case TiledPhase::Kind::Accumulate: {
      const PhaseGemm &gemm = gemms[p];
      const void *in = input(p, step);
      float *out = at(phase.out, step, j);
      for (int64_t c0 = 0; c0 < s.block; c0 += gemm.panel)
        gemm.multiply(j * gemm.blockElements + c0 * gemm.depth, in, out + c0,
                      false);
      return;
    }
    }
  }

  /// A product's input rows at `step`: the f32 rows, or in bf16 this
  /// member's copy rounded to bfloat16, made at its first use in the step
  /// (after the team met for rows written in the step, Member::meetsFirst).
  /// Each member rounds every row itself, once per phase that multiplies
  /// (a product's 64 x 512 values, a backward accumulation's 64 x 4H):
  /// a few µs against ~150 µs of LSTM's product per member and step at 2
  /// threads.
  const void *input(size_t p, int64_t step) {
    const TiledPhase &phase = s.phases[p];
    const float *in = rows(phase.in, step);
    if (!s.bf16)
      return in;
    if (roundedAt[p] != step) {
      roundToBf16(in, s.batch, gemms[p].depth, phase.in.stride,
                  roundedRows[p].data());
      roundedAt[p] = step;
    }
    return roundedRows[p].data();
  }

  /// Whole rows of an operand at `step`.
  float *rows(const TiledArg &arg, int64_t step) {
    if (arg.kind == TiledArg::Kind::Slot)
      return slots[arg.pair][arg.index];
    float *origin = arg.array ? *arg.array + arg.column : arg.base;
    return origin + step * arg.stepAdvance;
  }

  /// The operand moved to block j's columns.
  float *at(const TiledArg &arg, int64_t step, int64_t j) {
    if (arg.kind == TiledArg::Kind::Product)
      return product(arg.phase, j) + arg.index * s.block;
    return rows(arg, step) + j * s.block;
  }

  float *product(size_t phase, int64_t j) {
    return products[phase].data() +
           (j - first) * s.batch * s.phases[phase].gates * s.block;
  }

  const TiledSteps &s;
  std::vector<PhaseGemm> &gemms;
  int64_t first, last;
  /// Whether each product prefetches the panel after the one it
  /// multiplies: within a block the next one; after a block's last panel
  /// the next block's first (used once the block's other phases ran) or,
  /// for the last block, past the panels (a prefetch never faults). Each
  /// panel streams from L3 (LSTM's 4 MB and GRU's 3.1 MB recurrent weights
  /// at H = 512 exceed a core's L2), and a team of one multiplying 64 rows
  /// ran faster with the prefetch (1-thread inference, T = 50 B = 64, four
  /// interleaved rounds: LSTM 129-136 → 126-130 ms, GRU 92-97 → 92-95, LAU
  /// 146-150 → 138-146; ATR, whose 1 MB weight about fits L2, level;
  /// bench/README.md, "Prefetching panels"). A team of two ran 2-5% slower
  /// with it (the cores share L3's bandwidth), and so did 1-row steps (LSTM
  /// 106 → 128 µs), whose products are too short to hide it; hence
  /// kMinPrefetchRows.
  bool prefetch = false;
  std::vector<float *> slots[4];
  std::vector<std::vector<float>> products;
  std::vector<std::vector<int64_t>> strides;
  /// Each kernel phase's arguments, bound per block (this member's only).
  std::vector<std::vector<float *>> pointers;
  /// bf16: each product's input rows rounded (input()), and the step they
  /// were rounded for.
  std::vector<std::vector<uint16_t>> roundedRows;
  std::vector<int64_t> roundedAt;
  /// Whether the team meets before phase p of each step.
  std::vector<bool> meetsFirst;
};
#endif

} // namespace

int64_t cellrt::detail::tiledStepCalls() { return tiledCalls.load(); }

int64_t cellrt::detail::tiledStepFailures() { return tiledFailures.load(); }

int64_t cellrt::detail::tiledPanelPacks() { return panelPacks.load(); }

int64_t cellrt::detail::tiledPrefetchingCalls() {
  return prefetchingCalls.load();
}

namespace {
/// -1 until CELLRT_TILED_STEPS is read or setTiledSteps decides, else a
/// TiledMode.
std::atomic<int> tiledMode{-1};

TiledMode modeFromEnvironment() {
  const char *value = std::getenv("CELLRT_TILED_STEPS");
  if (value && std::strcmp(value, "0") == 0)
    return TiledMode::Off;
  if (value && std::strcmp(value, "1") == 0)
    return TiledMode::On;
  return TiledMode::Auto;
}
} // namespace

TiledMode cellrt::detail::tiledStepsMode() {
  int mode = tiledMode.load();
  if (mode < 0) {
    tiledMode.compare_exchange_strong(
        mode, static_cast<int>(modeFromEnvironment()));
    mode = tiledMode.load();
  }
  return static_cast<TiledMode>(mode);
}

bool cellrt::detail::tiledStepsWanted(bool training) {
  if (!tiledStepsAvailable())
    return false;
  switch (tiledStepsMode()) {
  case TiledMode::Off:
    return false;
  case TiledMode::On:
    return true;
  case TiledMode::Auto:
    return !training || threads() >= 2;
  }
  return false;
}

bool cellrt::detail::tiledStepsAvailable() {
#ifdef CELLRT_HAVE_LIBXSMM
  return true;
#else
  return false;
#endif
}

void cellrt::detail::setTiledSteps(TiledMode mode) {
  tiledMode.store(static_cast<int>(mode));
}

int64_t cellrt::detail::tiledBlock(int64_t hidden) {
  for (int64_t block : {64, 32, 16, 8})
    if (hidden % block == 0 && hidden / block >= 2)
      return block;
  return 0;
}

static std::atomic<bool> failForTesting{false};

void cellrt::detail::failTiledStepsForTesting(bool fail) {
  failForTesting = fail;
}

#ifdef CELLRT_HAVE_LIBXSMM
/// A description's micro-kernels and each member's share and buffers,
/// kept between runs of the same description (a decoder's every step).
struct cellrt::detail::TiledRun {
  const TiledSteps *described = nullptr;
  std::vector<PhaseGemm> gemms;
  std::vector<std::unique_ptr<Member>> members;
};
#else
struct cellrt::detail::TiledRun {
  const TiledSteps *described = nullptr;
};
#endif

/// runTiledSteps without the failure count.
static Status tryTiledSteps(const TiledSteps &s, TiledRun &run) {
  if (failForTesting)
    return Status::error("tiled steps failed (failTiledStepsForTesting)");
#ifdef CELLRT_HAVE_LIBXSMM
  std::vector<PhaseGemm> &gemms = run.gemms;
  if (gemms.size() != s.phases.size()) {
    gemms.assign(s.phases.size(), PhaseGemm());
    for (size_t p = 0; p < s.phases.size(); ++p)
      if (Status status = preparePhase(s, s.phases[p], gemms[p]);
          !status.ok()) {
        gemms.clear();
        return status;
      }
  }
  for (size_t p = 0; p < s.phases.size(); ++p)
    placePanels(s, s.phases[p], gemms[p]);
  tiledCalls.fetch_add(1);
  if (s.bf16)
    for (const TiledPhase &phase : s.phases)
      if (phase.kind != TiledPhase::Kind::Kernel)
        countBf16Product();
  int64_t blocks = s.hidden / s.block, team = 0;
  bool prefetch = false;
  std::optional<SpinBarrier> barrier;
  runTeam(
      blocks,
      [&](int64_t size) {
        team = size;
        barrier.emplace(size);
        run.members.resize(size);
        // Member::prefetch; only products have prefetching kernels.
        prefetch =
            team == 1 &&
            std::any_of(gemms.begin(), gemms.end(), [](const PhaseGemm &gemm) {
              return gemm.prefetching != nullptr;
            });
        prefetchingCalls.fetch_add(prefetch);
      },
      [&](int64_t member) {
        int64_t first = blocks * member / team,
                last = blocks * (member + 1) / team;
        std::unique_ptr<Member> &share = run.members[member];
        // Made on the member's own thread, which touches its buffers first.
        if (!share || !share->covers(first, last))
          share = std::make_unique<Member>(s, gemms, first, last);
        share->run(*barrier, prefetch);
      });
  for (size_t p = 0; p < s.phases.size(); ++p)
    keepPanels(s, s.phases[p], gemms[p]);
  return Status::success();
#else
  (void)s;
  (void)run;
  return Status::error("cellrt was built without libxsmm: no tiled steps");
#endif
}

Status cellrt::detail::runTiledSteps(const TiledSteps &s,
                                     std::shared_ptr<TiledRun> *kept) {
  TiledRun once;
  TiledRun *run = &once;
  if (kept) {
    if (!*kept || (*kept)->described != &s) {
      *kept = std::make_shared<TiledRun>();
      (*kept)->described = &s;
    }
    run = kept->get();
  }
  Status status = tryTiledSteps(s, *run);
  if (!status.ok())
    tiledFailures.fetch_add(1);
  return status;
}
