//===- models/common/WordByWordAttention.h - Word-by-word -------*- C++ -*-===//
//
// Word-by-word attention (Rocktaschel et al. 2016), the NLI model of the ATR
// paper (A.2.2). Premise outputs Y [L, B, k] and hypothesis outputs
// H [N, B, k], both time-major with per-example lengths. For each
// hypothesis step t = 1..N, with r_0 = 0:
//   M_t     = tanh(Wy Y + (Wh h_t + Wr r_{t-1}) (x) e_L)
//   alpha_t = softmax(w^T M_t) over the premise's valid positions
//   r_t     = Y alpha_t^T + tanh(Wt r_{t-1})
// and the pair's representation h* = tanh(Wp r_N + Wx h_N), where N is each
// example's own hypothesis length. As in the paper, there are no biases.
//
// Each step is additive attention with keys Wy Y and query
// Wh h_t + Wr r_{t-1}, so it runs on the attention kernels of Math.h.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_WORDBYWORDATTENTION_H
#define CELLC_MODELS_COMMON_WORDBYWORDATTENTION_H

#include "models/common/Param.h"

#include <cstdint>
#include <string>
#include <vector>

namespace models {

class WordByWordAttention {
public:
  /// What backward needs from forward, one per batch. Y, H and the lengths
  /// stay the caller's: they must outlive the cache and not change.
  struct Cache {
    const float *Y = nullptr, *H = nullptr;
    const int32_t *premiseLengths = nullptr, *hypothesisLengths = nullptr;
    int64_t L = 0, N = 0, B = 0;
    /// Wy Y, [L, B, k]: the keys, the same at every step.
    std::vector<float> WyY;
    /// The queries Wh h_t + Wr r_{t-1}, [N, B, k].
    std::vector<float> Q;
    /// alpha_t, [N, L, B] (0 where masked).
    std::vector<float> alpha;
    /// r_0 .. r_N, [N + 1, B, k].
    std::vector<float> r;
    /// tanh(Wt r_{t-1}), [N, B, k].
    std::vector<float> carry;
    /// r and h at each example's last hypothesis step, and h*; [B, k] each.
    std::vector<float> rLast, hLast, hStar;
  };

  /// Registers NAME.Wy, NAME.Wh, NAME.Wr, NAME.Wt, NAME.Wp, NAME.Wx [k, k]
  /// and NAME.w [k].
  WordByWordAttention(ParamStore &store, const std::string &name, int64_t k);

  int64_t width() const { return int64_t(w->value.size()); }

  /// Runs every hypothesis step for the batch and writes h* [B, k] (also
  /// kept in cache.hStar). Steps past an example's hypothesis length still
  /// run for it, so that each step is one batch of B rows for the kernels,
  /// but never reach h*; padded positions of Y and H must be finite.
  /// Throws std::invalid_argument unless the lengths are in [1, L], [1, N].
  void forward(const float *Y, const int32_t *premiseLengths, int64_t L,
               const float *H, const int32_t *hypothesisLengths, int64_t N,
               int64_t B, Cache &cache, float *hStar) const;
  /// Backward through time given dh* [B, k]: adds to dY [L, B, k], dH
  /// [N, B, k] and every parameter's gradient. Padded positions get none.
  void backward(const Cache &cache, const float *dHStar, float *dY,
                float *dH) const;

private:
  void bind(Cache &cache, const float *Y, const int32_t *premiseLengths,
            int64_t L, const float *H, const int32_t *hypothesisLengths,
            int64_t N, int64_t B) const;
  void forwardStep(Cache &cache, int64_t t) const;
  void output(Cache &cache, float *hStar) const;
  void backwardStep(const Cache &cache, int64_t t, const float *drLast,
                    float *dr, float *dQ, float *dCarry, float *dWyY,
                    float *dY) const;

  Param *Wy, *Wh, *Wr, *Wt, *Wp, *Wx, *w;
};

} // namespace models

#endif
