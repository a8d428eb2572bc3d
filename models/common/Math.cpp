//===- models/common/Math.cpp - GEMM, RNG and layer kernels --------------===//

#include "models/common/Math.h"

#include "models/common/VectorExp.h"

#include "cellrt/KeepRoundedOperands.h"
#include "cellrt/Runtime.h"

#include <oneapi/dnnl/dnnl.h>

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <stdexcept>

namespace models {

static std::atomic<cellrt::Precision> precisionOfProducts{
    cellrt::Precision::F32};

void setProductPrecision(cellrt::Precision precision) {
  precisionOfProducts = precision;
}

namespace {
thread_local std::optional<cellrt::Precision> threadPrecision;
} // namespace

cellrt::Precision productPrecision() {
  return threadPrecision ? *threadPrecision : precisionOfProducts.load();
}

ThreadProductPrecision::ThreadProductPrecision(cellrt::Precision precision)
    : previous(threadPrecision) {
  threadPrecision = precision;
}

ThreadProductPrecision::~ThreadProductPrecision() {
  threadPrecision = previous;
}

namespace {
std::function<void(const LayerProduct &)> layerProductObserver;
} // namespace

void setLayerProductObserver(
    std::function<void(const LayerProduct &)> observer) {
  layerProductObserver = std::move(observer);
}

void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
          float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
          float beta, float *C, int64_t ldc) {
  if (M == 0 || N == 0)
    return;
  if (layerProductObserver)
    layerProductObserver({transA, transB, M, N, K, beta});
  if (productPrecision() == cellrt::Precision::BF16) {
    cellrt::Status status =
        alpha == 1.0f
            ? cellrt::multiply(cellrt::Precision::BF16, transA, transB, M, N, K,
                               A, lda, B, ldb, beta, C, ldc)
            : cellrt::Status::error("bf16 products take alpha 1");
    if (!status.ok()) {
      std::fprintf(stderr, "nmt: %s\n", status.message().c_str());
      std::abort();
    }
    return;
  }
  if (K == 0) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        C[i * ldc + j] = beta == 0 ? 0.f : beta * C[i * ldc + j];
    return;
  }
  dnnl_status_t status = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', M,
                                    N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  if (status != dnnl_success) {
    std::fprintf(stderr, "nmt: dnnl_sgemm failed (status %d)\n", int(status));
    std::abort();
  }
}

void linear(const float *X, int64_t rows, int64_t in, const float *W,
            int64_t out, float *Y, bool accumulate) {
  gemm(false, true, rows, out, in, 1.f, X, in, W, in, accumulate ? 1.f : 0.f, Y,
       out);
}

void linearBackward(const float *X, int64_t rows, int64_t in, const float *W,
                    int64_t out, const float *dY, float *dW, float *dX,
                    bool accumulateDx) {
  // In bf16 both products read dY: rounded once.
  cellrt::KeepRoundedOperands roundOnce(
      dW && dX && productPrecision() == cellrt::Precision::BF16);
  if (dW)
    gemm(true, false, out, in, rows, 1.f, dY, out, X, in, 1.f, dW, in);
  if (dX)
    gemm(false, false, rows, in, out, 1.f, dY, out, W, in,
         accumulateDx ? 1.f : 0.f, dX, in);
}

void addBias(float *Y, int64_t rows, int64_t n, const float *b) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j)
      Y[r * n + j] += b[j];
}

void biasBackward(const float *dY, int64_t rows, int64_t n, float *db) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j)
      db[j] += dY[r * n + j];
}

static uint64_t splitmix(uint64_t &x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void Rng::reseed(uint64_t seed) {
  for (uint64_t &word : s)
    word = splitmix(seed);
}

uint64_t Rng::next() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

void uniformInit(std::vector<float> &values, float scale, Rng &rng) {
  for (float &value : values)
    value = float((rng.uniform() * 2 - 1) * scale);
}

// The element-wise layers below run on every target word of every batch;
// written so clang vectorises them: exp inline at the loop's width
// (VectorExp.h), tanh from exp, reductions reassociated (this file's
// `#pragma clang fp reassociate`), rows split across the runtime's threads.

/// tanh(x) = 1 - 2 / (exp(2x) + 1): one vectorisable exp, exact limits at
/// +-inf, absolute error ~1e-7.
static inline float tanhFromExp(float x) {
  return 1.f - 2.f / (vectorExp(2.f * x) + 1.f);
}

void tanhInPlace(float *x, int64_t n) {
  cellrt::parallelFor(n, n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      x[i] = tanhFromExp(x[i]);
  });
}

void tanhBackward(const float *y, float *dy, int64_t n) {
  // Split like tanhInPlace: at 2 threads a serial pass over a batch's
  // states left the second thread waiting. Unfused, so that it gives the
  // same bits on machines with and without FMA (the drivers' own loops,
  // built for any x86-64, never fuse).
  cellrt::parallelFor(n, n, [&](int64_t begin, int64_t end) {
#pragma clang fp contract(off)
    for (int64_t i = begin; i < end; ++i)
      dy[i] *= 1 - y[i] * y[i];
  });
}

/// out[a] = tanh(q[a] + k[a]); returns sum_a v[a] * out[a].
static float attentionEnergy(const float *q, const float *k, const float *v,
                             int64_t A, float *out) {
#pragma clang fp reassociate(on)
  for (int64_t a = 0; a < A; ++a)
    out[a] = tanhFromExp(q[a] + k[a]);
  float sum = 0;
  for (int64_t a = 0; a < A; ++a)
    sum += v[a] * out[a];
  return sum;
}

/// Enough rows x elements for a second thread to pay for its wake-up.
static int64_t attentionWork(const AttentionShape &s) {
  return s.R * s.T * (s.A + s.C);
}

void checkLengths(const int32_t *lengths, int64_t B, int64_t T,
                  const std::string &what) {
  for (int64_t b = 0; b < B; ++b)
    if (lengths[b] < 1 || lengths[b] > T)
      throw std::invalid_argument(
          what + " length " + std::to_string(lengths[b]) + " of row " +
          std::to_string(b) + " is outside [1, " + std::to_string(T) + "]");
}

void attentionForward(const AttentionShape &s, const float *ann,
                      const float *UH, const int32_t *lengths,
                      const int32_t *row2seq, const float *Q, const float *v,
                      float *alpha, float *context) {
  cellrt::parallelFor(s.R, attentionWork(s), [&](int64_t begin, int64_t end) {
#pragma clang fp reassociate(on)
    std::vector<float> e(s.T), z(s.A);
    for (int64_t r = begin; r < end; ++r) {
      int64_t b = row2seq ? row2seq[r] : r;
      int64_t L = lengths[b];
      const float *q = Q + r * s.A;
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t t = 0; t < L; ++t) {
        e[t] = attentionEnergy(q, UH + (t * s.B + b) * s.A, v, s.A, z.data());
        best = std::max(best, e[t]);
      }
      float total = 0;
      for (int64_t t = 0; t < L; ++t) {
        e[t] = vectorExp(e[t] - best);
        total += e[t];
      }
      float *c = context + r * s.C;
      std::fill(c, c + s.C, 0.f);
      for (int64_t t = 0; t < s.T; ++t) {
        float a = t < L ? e[t] / total : 0.f;
        alpha[t * s.R + r] = a;
        if (t >= L)
          continue;
        const float *h = ann + (t * s.B + b) * s.C;
        for (int64_t j = 0; j < s.C; ++j)
          c[j] += a * h[j];
      }
    }
  });
}

void attentionBackward(const AttentionShape &s, const float *ann,
                       const float *UH, const int32_t *lengths,
                       const int32_t *row2seq, const float *Q, const float *v,
                       const float *alpha, const float *dContext, float *dAnn,
                       float *dUH, float *dQ, float *dv) {
  // Rows write their sequence's dAnn/dUH: disjoint only when every row is
  // its own sequence. dv is summed per chunk, then in chunk order.
  std::mutex dvMutex;
  std::vector<std::pair<int64_t, std::vector<float>>> dvParts;
  auto body = [&](int64_t begin, int64_t end) {
#pragma clang fp reassociate(on)
    std::vector<float> dAlpha(s.T), z(s.A), dvPart(s.A, 0.f);
    for (int64_t r = begin; r < end; ++r) {
      int64_t b = row2seq ? row2seq[r] : r;
      int64_t L = lengths[b];
      const float *dc = dContext + r * s.C;
      const float *q = Q + r * s.A;
      float *dq = dQ + r * s.A;
      std::fill(dq, dq + s.A, 0.f);
      float weighted = 0;
      for (int64_t t = 0; t < L; ++t) {
        const float *h = ann + (t * s.B + b) * s.C;
        float *dh = dAnn ? dAnn + (t * s.B + b) * s.C : nullptr;
        float a = alpha[t * s.R + r];
        float sum = 0;
        if (dh) {
          for (int64_t j = 0; j < s.C; ++j) {
            sum += dc[j] * h[j];
            dh[j] += a * dc[j];
          }
        } else {
          for (int64_t j = 0; j < s.C; ++j)
            sum += dc[j] * h[j];
        }
        dAlpha[t] = sum;
        weighted += a * sum;
      }
      for (int64_t t = 0; t < L; ++t) {
        float de = alpha[t * s.R + r] * (dAlpha[t] - weighted);
        const float *k = UH + (t * s.B + b) * s.A;
        float *dk = dUH + (t * s.B + b) * s.A;
        attentionEnergy(q, k, v, s.A, z.data());
        for (int64_t a = 0; a < s.A; ++a) {
          dvPart[a] += de * z[a];
          float dpre = de * v[a] * (1 - z[a] * z[a]);
          dq[a] += dpre;
          dk[a] += dpre;
        }
      }
    }
    std::lock_guard<std::mutex> lock(dvMutex);
    dvParts.emplace_back(begin, std::move(dvPart));
  };
  if (row2seq)
    body(0, s.R);
  else
    cellrt::parallelFor(s.R, attentionWork(s), body);
  std::sort(dvParts.begin(), dvParts.end(),
            [](const auto &x, const auto &y) { return x.first < y.first; });
  for (const auto &part : dvParts)
    for (int64_t a = 0; a < s.A; ++a)
      dv[a] += part.second[a];
}

int64_t firstAbove(const float *x, int64_t begin, int64_t n, float threshold) {
  constexpr int64_t kLanes = 16;
  int64_t i = begin;
  // A chunk's lanes are or-ed without branches, so each chunk is a few
  // vector compares; the scalar loop then finds the element in it.
  for (; i + kLanes <= n; i += kLanes) {
    bool any = false;
    for (int64_t k = 0; k < kLanes; ++k)
      any |= x[i + k] > threshold;
    if (any)
      break;
  }
  for (; i < n; ++i)
    if (x[i] > threshold)
      return i;
  return n;
}

void attentionAnnotationsBackward(const AttentionShape &s,
                                  const int32_t *lengths,
                                  const std::vector<const float *> &alphas,
                                  const float *dContexts, float scale,
                                  float *dAnn) {
  const int64_t steps = int64_t(alphas.size());
  // Sequences write disjoint rows of dAnn: split over them.
  cellrt::parallelFor(s.B, s.B * s.T * steps * s.C,
                      [&](int64_t begin, int64_t end) {
                        for (int64_t b = begin; b < end; ++b)
                          for (int64_t t = 0; t < lengths[b]; ++t) {
                            float *dh = dAnn + (t * s.B + b) * s.C;
                            for (int64_t j = 0; j < steps; ++j) {
                              const float a = scale * alphas[j][t * s.B + b];
                              const float *dc = dContexts + (j * s.B + b) * s.C;
                              for (int64_t k = 0; k < s.C; ++k)
                                dh[k] += a * dc[k];
                            }
                          }
                      });
}

bool setThreads(int n) {
  if (n <= 0)
    return true;
  // The cells' kernels and the layers' parallelFor share cellrt's pool,
  // which otherwise takes every core: `--threads 1` runs side by side
  // would each wake a second thread on a core the other run holds.
  cellrt::setNumThreads(n);
  // The OpenMP runtime comes with oneDNN; look it up rather than link it.
  using SetFn = void (*)(int);
  auto set =
      reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (!set)
    return false;
  set(n);
  return true;
}

} // namespace models
