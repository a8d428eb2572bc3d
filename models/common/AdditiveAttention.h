//===- models/common/AdditiveAttention.h - Bahdanau attention ---*- C++ -*-===//
//
// Additive attention (Bahdanau et al. 2015) of queries over annotations
// ann [T, B, C] (time-major; positions t >= lengths[b] are masked out):
//   e_t = v . tanh(Wa q + Ua a_t + b),  alpha = softmax(e) over t < length,
//   context = sum_t alpha_t a_t.
// The keys Ua a_t + b do not depend on the query, so precompute() projects
// them once per batch and attend() runs once per query (per decoder step).
// Like Linear, the layer holds only its parameters: what backward needs is
// in the caller's Keys (one per batch) and Steps (one per attend call).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_ADDITIVEATTENTION_H
#define CELLC_MODELS_COMMON_ADDITIVEATTENTION_H

#include "models/common/LayerNorm.h"
#include "models/common/Param.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace models {

struct AttentionOptions {
  /// SR-NMT's attention (Di Gangi and Federico 2018, §3.2): a layer norm
  /// (gain and bias, NAME.query_norm / NAME.key_norm) over the projected
  /// query and keys, e = v . tanh(LN(Wa q) + LN(Ua a)); no bias b then.
  bool layerNorm = false;
  /// The context is multiplied by this (SR-NMT: 1/sqrt(d)).
  float contextScale = 1.f;
};

class AdditiveAttention {
public:
  /// One batch of annotations and their keys. `ann` and `lengths` stay the
  /// caller's: they must outlive the keys and not change while in use.
  struct Keys {
    const float *ann = nullptr;
    const int32_t *lengths = nullptr;
    int64_t T = 0, B = 0;
    /// ann Ua^T + b, [T, B, A] (layer-normed: LN(ann Ua^T), and rawUH
    /// before the norm).
    std::vector<float> UH, rawUH;
    LayerNorm::Stats keyStats;
    /// The gradient of UH summed over backward() calls, for keysBackward().
    std::vector<float> dUH;
  };
  /// What the backward of one attend() call needs.
  struct Step {
    int64_t R = 0;
    /// Empty when row r attends sequence r.
    std::vector<int32_t> row2seq;
    /// The projected queries Wa q, [R, A] (layer-normed: LN(Wa q), and
    /// rawQ before the norm).
    std::vector<float> Q, rawQ;
    LayerNorm::Stats queryStats;
    /// The attention weights, [T, R] (0 where masked).
    std::vector<float> alpha;
  };

  /// Registers NAME.Wa [A, queryWidth], NAME.Ua [A, contextWidth], NAME.b [A]
  /// and NAME.v [A], A = attentionWidth. All four are always trained.
  AdditiveAttention(ParamStore &store, const std::string &name,
                    int64_t queryWidth, int64_t contextWidth,
                    int64_t attentionWidth,
                    const AttentionOptions &options = {});

  int64_t queryWidth() const { return Wa->shape[1]; }
  int64_t contextWidth() const { return Ua->shape[1]; }
  int64_t attentionWidth() const { return Ua->shape[0]; }

  /// keys.UH = ann Ua^T + b for ann [T, B, C]; throws std::invalid_argument
  /// unless every length is in [1, T].
  void precompute(const float *ann, const int32_t *lengths, int64_t T,
                  int64_t B, Keys &keys) const;
  /// Attends rows of query [R, queryWidth]: row r over sequence row2seq[r]
  /// (several rows may share one, as beams do), or over sequence r when
  /// row2seq is null (then R <= B). Writes context [R, C] and fills `step`.
  void attend(const Keys &keys, const float *query, int64_t R,
              const int32_t *row2seq, Step &step, float *context) const;
  /// Backward of one attend() (`query` as given to it), steps in any order.
  /// Given dContext [R, C]: dAnn [T, B, C] += the gradient through the
  /// weighted sum (null: left for annotationsBackward()), keys.dUH += the keys'
  /// gradient, dQuery [R, queryWidth] (when given) gets the query's gradient
  /// (added with accumulateDQuery, else overwritten), and Wa.grad, v.grad get
  /// theirs. With dProjectedQuery [R, A], Wa.grad is left for
  /// queryWeightBackward(): the gradient of Wa q is written there instead.
  void backward(Keys &keys, const float *query, const Step &step,
                const float *dContext, float *dAnn, float *dQuery,
                bool accumulateDQuery = true,
                float *dProjectedQuery = nullptr) const;
  /// With dAnn null in backward(): the weighted sums' part of dAnn for
  /// teacher-forced steps (R = B, no row2seq) given their dContexts
  /// [steps, B, C], in one pass that writes each row of dAnn once.
  void annotationsBackward(const Keys &keys,
                           const std::vector<const Step *> &steps,
                           const float *dContexts, float *dAnn) const;
  /// After the batch's last backward(): pushes keys.dUH through the key
  /// projection in one GEMM (Ua.grad, b.grad, dAnn +=), then clears it.
  void keysBackward(Keys &keys, float *dAnn) const;
  /// Wa.grad += dProjected^T queries for `rows` queries [rows, queryWidth]
  /// and their dProjectedQuery from backward() [rows, A]: a decoder whose
  /// steps' queries lie in one array pays one GEMM for all its steps, as
  /// keysBackward() does for the keys.
  void queryWeightBackward(const float *queries, int64_t rows,
                           const float *dProjected) const;

private:
  /// dQ (of the attention's input queries) back through the query norm.
  void queryNormBackward(const Step &step, float *dQ) const;

  Param *Wa, *Ua, *b = nullptr, *v;
  float contextScale;
  std::unique_ptr<LayerNorm> queryNorm, keyNorm;
};

} // namespace models

#endif
