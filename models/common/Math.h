//===- models/common/Math.h - GEMM, RNG and layer kernels ------*- C++ -*-===//
//
// The kernels under the layer library: row-major GEMM through oneDNN's
// dnnl_sgemm, linear maps and biases, a seeded RNG whose state can be
// saved, tanh, and additive attention over precomputed keys (shared by
// AdditiveAttention.h and WordByWordAttention.h). The layer classes
// (Linear.h, ...) are built on them; a kernel only one layer uses lives in
// that layer's file.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_MATH_H
#define CELLC_MODELS_COMMON_MATH_H

#include "models/common/Param.h"

#include "cellrt/Precision.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace models {

/// What gemm() and the cells loadCell() returns multiply in: f32 (the
/// default), or bf16 (operands rounded to bfloat16, f32 sums; the drivers'
/// --precision bf16). Set it before building a model.
void setProductPrecision(cellrt::Precision precision);
/// This thread's ThreadProductPrecision where one is alive, else the
/// process's setting.
cellrt::Precision productPrecision();

/// While alive, this thread's products run in `precision` whatever
/// setProductPrecision says (an ensemble's models each decode in the
/// precision they were built in); the previous one returns at its end.
class ThreadProductPrecision {
public:
  explicit ThreadProductPrecision(cellrt::Precision precision);
  ~ThreadProductPrecision();
  ThreadProductPrecision(const ThreadProductPrecision &) = delete;
  ThreadProductPrecision &operator=(const ThreadProductPrecision &) = delete;

private:
  std::optional<cellrt::Precision> previous;
};

/// C[M,N] = alpha * op(A) * op(B) + beta * C, all row-major. op(A) is
/// [M,K]; A is stored [K,M] when transA. Aborts on a oneDNN error. In bf16
/// (setProductPrecision) alpha must be 1 and beta 0 or 1.
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
          float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
          float beta, float *C, int64_t ldc);

/// One product of gemm(), for measuring what a model's layers multiply
/// (bench/nmt-floor; the cells' own products: cellrt/Products.h).
struct LayerProduct {
  bool transA, transB;
  int64_t m, n, k;
  float beta;
};
/// Calls `observer` with every gemm() from now on (empty: stop); for
/// measuring runs on one thread.
void setLayerProductObserver(
    std::function<void(const LayerProduct &)> observer);

/// Y[rows, out] (+)= X[rows, in] * W^T with W [out, in] (a linear layer).
void linear(const float *X, int64_t rows, int64_t in, const float *W,
            int64_t out, float *Y, bool accumulate);
/// Backward of linear: dW += dY^T X; dX (+)= dY W (dX may be null).
void linearBackward(const float *X, int64_t rows, int64_t in, const float *W,
                    int64_t out, const float *dY, float *dW, float *dX,
                    bool accumulateDx);
/// Adds bias b[n] to every row of Y[rows, n]; backward sums rows into db.
void addBias(float *Y, int64_t rows, int64_t n, const float *b);
void biasBackward(const float *dY, int64_t rows, int64_t n, float *db);

/// A small, portable generator (xoshiro256**): same stream everywhere, and
/// its whole state is four words to save in a checkpoint.
class Rng {
public:
  explicit Rng(uint64_t seed = 1) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next();
  /// Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
  /// Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return next() % n; }
  uint64_t s[4];
};

/// Fisher-Yates with `rng`.
template <typename T> void shuffle(std::vector<T> &items, Rng &rng) {
  for (size_t i = items.size(); i > 1; --i)
    std::swap(items[i - 1], items[rng.below(i)]);
}

/// Every value uniform in [-scale, scale].
void uniformInit(std::vector<float> &values, float scale, Rng &rng);

/// Additive (Bahdanau) attention over annotations ann [T, B, C] (time-major,
/// valid where t < lengths[row2seq[r]]) with keys UH = ann Ua^T + ba
/// [T, B, A] precomputed. Row r of the queries Q [R, A] (= Wa s) attends over
/// sequence row2seq[r] (R = B when training; B*beam when decoding).
struct AttentionShape {
  int64_t T, B, C, A, R;
};
/// Throws std::invalid_argument naming `what` unless every lengths[b],
/// b < B, is in [1, T]: a masked softmax needs at least one position.
void checkLengths(const int32_t *lengths, int64_t B, int64_t T,
                  const std::string &what);
/// alpha [T, R] and context [R, C].
void attentionForward(const AttentionShape &s, const float *ann,
                      const float *UH, const int32_t *lengths,
                      const int32_t *row2seq, const float *Q, const float *v,
                      float *alpha, float *context);
/// Backward given dContext [R, C]: accumulates dAnn [T,B,C], dUH [T,B,A],
/// dQ [R,A] (overwritten) and dv [A]. dAnn null: the weighted sum's
/// gradient is left for attentionAnnotationsBackward().
void attentionBackward(const AttentionShape &s, const float *ann,
                       const float *UH, const int32_t *lengths,
                       const int32_t *row2seq, const float *Q, const float *v,
                       const float *alpha, const float *dContext, float *dAnn,
                       float *dUH, float *dQ, float *dv);

/// dAnn[t, b] += scale * sum_j alphas[j][t, b] dContexts[j, b] over `steps`
/// steps whose rows are the sequences (R = B): the weighted sum's part of
/// the annotations' gradient, after a teacher-forced decoder's sweep, each
/// row of dAnn written once instead of once per step.
void attentionAnnotationsBackward(const AttentionShape &s,
                                  const int32_t *lengths,
                                  const std::vector<const float *> &alphas,
                                  const float *dContexts, float scale,
                                  float *dAnn);
/// x[i] = tanh(x[i]) (absolute error ~1e-7).
void tanhInPlace(float *x, int64_t n);
/// Its backward given y = tanh(x): dy[i] *= 1 - y[i]^2.
void tanhBackward(const float *y, float *dy, int64_t n);

/// The first i in [begin, n) with x[i] > threshold, else n; 16 lanes at a
/// time (beam search's top-k skips most of a vocabulary row this way).
int64_t firstAbove(const float *x, int64_t begin, int64_t n, float threshold);

/// Sets the thread count of cellrt's pool (the cells' kernels and the
/// layers' parallelFor) and the OpenMP one of oneDNN (and anything else
/// using the process's OpenMP runtime); n <= 0 leaves them alone. Small models
/// run fastest on one thread, especially on a loaded machine. Returns false
/// when no OpenMP runtime is loaded.
bool setThreads(int n);

} // namespace models

#endif
