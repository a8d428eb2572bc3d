//===- FloorBench.cpp - The GEMM-only floor of each cell ------------------===//
//
// Exactly the matrix products of a well-planned schedule of the cell
// (docs/gemm-plans.md), on dnnl_sgemm like cellrt, with no element-wise work
// at all: what no implementation built on these GEMMs can beat.
//
//   forward:   XP[T*B, Gx*H]  = X[T*B, I] · Wxᵀ            once (hoisted)
//              S_g[B, Gg*H]   = Hin_g[B, H] · U_gᵀ          per step, per
//                                                            recurrent group
//   backward:  dHin_g[B, H]  += dS_g[B, Gg*H] · U_g         per step
//              dU_g          += dS_gᵀ[Gg*H, T*B] · Hin_g     once over T*B rows
//              dWx           += dXPᵀ[Gx*H, T*B] · X          once
//              dX[T*B, I]    += dXP[T*B, Gx*H] · Wx          once
//   step:      XP[B, Gx*H] = x · Wxᵀ, then the recurrent groups on B rows;
//              from 4 rows on, by weights packed once for oneDNN's matmul,
//              as cellrt does with a decoder's PackedWeights (Gemm.h).
//
// Gx/Gg per cell: ATR 1/{1}, GRU 3/{2,1}, LSTM 4/{4}, LAU 5/{4}, SRU and
// SR-NMT 3/{} (no recurrent product). For SRU and SR-NMT, whose time is the
// element-wise scan's, the floor also reports the bytes a fused scan must
// move (CellShape::scanFloats*) without moving them: bench/report.py divides
// them by the measured copy bandwidth (the memory floor). Weights are kept
// stacked ([Wz;Wr;Wh]), so each stacked weight gradient is one GEMM. Operands
// hold small random values; nothing between the GEMMs is computed.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include "runtime/Gemm.h"

#include <oneapi/dnnl/dnnl.h>

using namespace cellc_bench;

namespace {

/// The flops of every product since the last reset: the floor counts the
/// work it does rather than restating its schedule as a formula.
double countedFlops = 0;
/// The workload's OpenMP team size.
int teamSize = 1;

void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float *a,
           int64_t lda, const float *b, int64_t ldb, float beta, float *c,
           int64_t ldc) {
  // cellrt runs products under 2 MFLOP on one thread (Gemm.cpp): so does
  // its floor.
  double flops = 2.0 * double(m) * double(n) * double(k);
  bool alone = teamSize > 1 && flops < 2e6;
  if (alone)
    setOmpTeamSize(1);
  if (dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc) !=
      dnnl_success)
    fail("dnnl_sgemm failed");
  if (alone)
    setOmpTeamSize(teamSize);
  countedFlops += flops;
}

/// out[m, n] = in[m, k] · weightᵀ by a weight packed once, on as many
/// threads as cellrt gives it (Gemm.cpp).
void packedProduct(const cellrt::PackedProduct &weight, int64_t m,
                   const float *in, float *out) {
  cellrt::Status status = weight.multiply(m, in, weight.k(), out, weight.n());
  if (!status.ok())
    fail(status.message());
  countedFlops += 2.0 * double(m) * double(weight.n()) * double(weight.k());
}

class FloorRunner : public Runner {
public:
  explicit FloorRunner(const Workload &w) : w(w), shape(cellShape(w.cell)) {
    int64_t rows = w.T * w.B, gx = shape.inputGates * w.H;
    float scale = 1.0f / std::sqrt(static_cast<float>(w.H));
    uint32_t seed = 100;
    wx = randomVector(gx * w.I, scale, seed++);
    x = randomVector(rows * w.I, 1.0f, seed++);
    xp.assign(rows * gx, 0.0f);
    bool training = w.mode == Mode::Training;
    // Training keeps every step's products and inputs; inference one step's.
    int64_t kept = training ? rows : w.B;
    for (int g : shape.stateGates) {
      u.push_back(randomVector(g * w.H * w.H, scale, seed++));
      hin.push_back(randomVector((training ? rows : w.B) * w.H, 0.5f, seed++));
      s.push_back(std::vector<float>(kept * g * w.H, 0.0f));
      if (training) {
        ds.push_back(randomVector(rows * g * w.H, 0.1f, seed++));
        dhin.push_back(std::vector<float>(w.B * w.H, 0.0f));
        du.push_back(std::vector<float>(g * w.H * w.H, 0.0f));
      }
    }
    if (w.mode == Mode::Step && w.B >= kMinRowsForPacked) {
      wxPacked = pack(wx, gx, w.I);
      for (size_t g = 0; g < u.size(); ++g)
        uPacked.push_back(pack(u[g], shape.stateGates[g] * w.H, w.H));
    }
    if (training) {
      dxp = randomVector(rows * gx, 0.1f, seed++);
      dwx.assign(gx * w.I, 0.0f);
      dx.assign(rows * w.I, 0.0f);
    }
  }

  void run() override {
    countedFlops = 0;
    teamSize = w.threads;
    schedule();
    lastFlops = countedFlops;
  }

  double gemmFlops() const override { return lastFlops; }

  double scanBytes() const override {
    bool training = w.mode == Mode::Training;
    int floats = training ? shape.scanFloatsTraining : shape.scanFloatsForward;
    double rows = w.mode == Mode::Step ? double(w.B * w.stepsPerRun)
                                       : double(w.T * w.B);
    return rows * floats * w.H * sizeof(float);
  }

private:
  void schedule() {
    int64_t gx = shape.inputGates * w.H;
    if (w.mode == Mode::Step) {
      for (int64_t step = 0; step < w.stepsPerRun; ++step) {
        if (wxPacked)
          packedProduct(*wxPacked, w.B, x.data(), xp.data());
        else
          sgemm('N', 'T', w.B, gx, w.I, x.data(), w.I, wx.data(), w.I, 0.0f,
                xp.data(), gx);
        recurrent(0);
      }
      return;
    }
    int64_t rows = w.T * w.B;
    sgemm('N', 'T', rows, gx, w.I, x.data(), w.I, wx.data(), w.I, 0.0f,
          xp.data(), gx);
    if (!shape.stateGates.empty())
      for (int64_t t = 0; t < w.T; ++t)
        recurrent(t);
    if (w.mode != Mode::Training)
      return;
    for (int64_t t = w.T - 1; t >= 0 && !shape.stateGates.empty(); --t)
      for (size_t g = 0; g < shape.stateGates.size(); ++g) {
        int64_t n = shape.stateGates[g] * w.H;
        sgemm('N', 'N', w.B, w.H, n, ds[g].data() + t * w.B * n, n,
              u[g].data(), w.H, 1.0f, dhin[g].data(), w.H);
      }
    for (size_t g = 0; g < shape.stateGates.size(); ++g) {
      int64_t n = shape.stateGates[g] * w.H;
      sgemm('T', 'N', n, w.H, rows, ds[g].data(), n, hin[g].data(), w.H, 1.0f,
            du[g].data(), w.H);
    }
    sgemm('T', 'N', gx, w.I, rows, dxp.data(), gx, x.data(), w.I, 1.0f,
          dwx.data(), w.I);
    sgemm('N', 'N', rows, w.I, gx, dxp.data(), gx, wx.data(), w.I, 1.0f,
          dx.data(), w.I);
  }

  void recurrent(int64_t t) {
    bool training = w.mode == Mode::Training;
    for (size_t g = 0; g < shape.stateGates.size(); ++g) {
      int64_t n = shape.stateGates[g] * w.H;
      const float *in = hin[g].data() + (training ? t * w.B * w.H : 0);
      float *out = s[g].data() + (training ? t * w.B * n : 0);
      if (!uPacked.empty())
        packedProduct(*uPacked[g], w.B, in, out);
      else
        sgemm('N', 'T', w.B, n, w.H, in, w.H, u[g].data(), w.H, 0.0f, out, n);
    }
  }

  static std::unique_ptr<cellrt::PackedProduct>
  pack(const std::vector<float> &matrix, int64_t rows, int64_t cols) {
    std::string error;
    auto packed = cellrt::PackedProduct::pack(matrix.data(), rows, cols, error);
    if (!packed)
      fail(error);
    return packed;
  }

  /// cellrt's threshold (runtime/Execution.cpp): up to 3 rows oneDNN's sgemm
  /// multiplies by a weight read transposed as fast.
  static constexpr int64_t kMinRowsForPacked = 4;

  Workload w;
  CellShape shape;
  double lastFlops = -1;
  std::vector<float> wx, x, xp, dxp, dwx, dx;
  std::vector<std::vector<float>> u, hin, s, ds, dhin, du;
  /// A step's weights packed for oneDNN's matmul (null: read transposed).
  std::unique_ptr<cellrt::PackedProduct> wxPacked;
  std::vector<std::unique_ptr<cellrt::PackedProduct>> uPacked;
};

Register reg({"floor",
              [](const Workload &w, std::string &) -> std::unique_ptr<Runner> {
                return std::make_unique<FloorRunner>(w);
              },
              [](int threads) { setOmpThreads(threads); }, prewarmSgemm});

} // namespace
