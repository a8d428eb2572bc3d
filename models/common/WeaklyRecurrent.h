//===- models/common/WeaklyRecurrent.h - SR-NMT's units ---------*- C++ -*-===//
//
// The weakly-recurrent units of SR-NMT (Di Gangi and Federico 2018, §3).
// Their only recurrence is an element-wise gated scan over inputs
// (`gatedScanSource()`, compiled by cellc), so each layer runs as a few
// whole-sequence GEMMs, one scan per direction and element-wise work.
//
// Encoder layer (§3.1), d wide, h = d/2:
//   [x->, x<-, g->, g<-, z] = LN(x W)                 W: in -> 4h + d
//   ->s_i = (1 - σ(g->_i)) ⊙ ->s_{i-1} + σ(g->_i) ⊙ x->_i  (forward scan)
//   <-s_i = (1 - σ(g<-_i)) ⊙ <-s_{i+1} + σ(g<-_i) ⊙ x<-_i  (backward scan)
//   out_i = (1 - σ(z_i)) ⊙ [->s_i ; <-s_i] + σ(z_i) ⊙ x_i  (highway)
// Decoder layer (§3.2), d wide, over the encoder's top output H:
//   [y~, g, z] = LN(y W)                              W: in -> 3d
//   s~_i = (1 - σ(g_i)) ⊙ s~_{i-1} + σ(g_i) ⊙ y~_i          (scan)
//   c_i  = attn(s~_i, H) / √d   (AdditiveAttention, layer-normed)
//   o_i  = tanh(LN(s~_i Ws) + LN(c_i Wc))
//   out_i = (1 - σ(z_i)) ⊙ o_i + σ(z_i) ⊙ y_i
// The paper's ablations are options: without layer norms (the projections
// get biases instead), without the highway (no z; out = the scans, or o).
// Outputs are zero at padded steps.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_WEAKLYRECURRENT_H
#define CELLC_MODELS_COMMON_WEAKLYRECURRENT_H

#include "models/common/AdditiveAttention.h"
#include "models/common/CellLayer.h"
#include "models/common/LayerNorm.h"
#include "models/common/Linear.h"

#include <memory>
#include <string>
#include <vector>

namespace models {

/// The scan both units run: a cell of inputs x and g and state s.
const char *gatedScanSource();

struct WeaklyRecurrentOptions {
  bool layerNorm = true;
  bool highway = true;
  /// Decoder: without, o = tanh(LN(s~ Ws)) (SR-NMT's single-attention
  /// ablation runs its lower decoder units so).
  bool attention = true;
};

/// LN(x W) (or x W + b without layer norms) over rows, with what backward
/// needs.
class NormedProjection {
public:
  struct Trace {
    std::vector<float> raw, out;
    LayerNorm::Stats stats;
  };
  NormedProjection(ParamStore &store, const std::string &name, int64_t in,
                   int64_t out, bool layerNorm);
  int64_t outputWidth() const { return linear.outputWidth(); }
  void forward(const float *x, int64_t rows, Trace &trace) const;
  /// ADDS dX (when given); the params' gradients accumulate.
  void backward(const float *x, int64_t rows, Trace &trace, const float *dOut,
                float *dX) const;

private:
  Linear linear;
  std::unique_ptr<LayerNorm> norm;
};

class WeaklyRecurrentEncoderLayer {
public:
  struct Trace {
    NormedProjection::Trace projection;
    /// The scans' inputs (x->, g->, x<-, g<-) and outputs, [T, B, h] each.
    std::vector<float> parts[4], forwardStates, backwardStates;
    /// [->s ; <-s], [T, B, d].
    std::vector<float> joined;
    CellTrace forwardScan, backwardScan;
    const float *input = nullptr;
    const int32_t *lengths = nullptr;
    int64_t T = 0, B = 0;
  };

  /// Throws DataError for an odd width, or a highway whose input is not d
  /// wide.
  WeaklyRecurrentEncoderLayer(const cellrt::Cell &scan, ParamStore &store,
                              const std::string &name, int64_t inputWidth,
                              int64_t width,
                              const WeaklyRecurrentOptions &options = {});

  int64_t outputWidth() const { return width; }
  /// input [T, B, inputWidth] (alive until backward); output [T, B, d].
  void forward(const float *input, const int32_t *lengths, int64_t T,
               int64_t B, float *output, Trace &trace, bool train) const;
  /// ADDS dInput (when given); the params' gradients accumulate.
  void backward(Trace &trace, const float *dOutput, float *dInput) const;

private:
  int64_t inputWidth, width;
  WeaklyRecurrentOptions options;
  NormedProjection projection;
  CellLayer forwardScan, backwardScan;
};

class WeaklyRecurrentDecoderLayer {
public:
  struct Trace {
    NormedProjection::Trace projection, stateProjection, contextProjection;
    /// The scan's inputs y~ and g, its states s~, the contexts and o,
    /// [T, B, width] each.
    std::vector<float> parts[2], states, contexts, o;
    std::vector<int32_t> rowSequences;
    CellTrace scan;
    AdditiveAttention::Step attention;
    const float *input = nullptr;
    const int32_t *lengths = nullptr;
    int64_t T = 0, B = 0;
  };

  /// Attends over a memory (the encoder's top output) `memoryWidth` wide
  /// with `attentionWidth`-wide keys. Throws DataError for a highway whose
  /// input is not d wide.
  WeaklyRecurrentDecoderLayer(const cellrt::Cell &scan, ParamStore &store,
                              const std::string &name, int64_t inputWidth,
                              int64_t width, int64_t memoryWidth,
                              int64_t attentionWidth,
                              const WeaklyRecurrentOptions &options = {});

  int64_t outputWidth() const { return width; }
  int64_t stateWidth() const { return width; }
  /// The keys of this layer's attention over memory [Tx, B, memoryWidth]
  /// (alive while the keys are).
  void precompute(const float *memory, const int32_t *memoryLengths,
                  int64_t Tx, int64_t B, AdditiveAttention::Keys &keys) const;
  /// input [T, B, inputWidth] (alive until backward); output [T, B, d].
  /// Every step attends at once: nothing of the attention feeds the scan.
  void forward(const AdditiveAttention::Keys &keys, const float *input,
               const int32_t *lengths, int64_t T, int64_t B, float *output,
               Trace &trace, bool train) const;
  /// ADDS dInput and dMemory (when given) and the params' gradients; runs
  /// the keys' backward too (one forward per batch and layer).
  void backward(AdditiveAttention::Keys &keys, Trace &trace,
                const float *dOutput, float *dInput, float *dMemory) const;
  /// One decoding step of `rows` rows: row r reads sentence sentences[r]
  /// of the memory and continues from row parents[r] of `states`
  /// ([stateRows, d]; null: zeros). Writes nextStates and output [rows, d].
  void step(const AdditiveAttention::Keys &keys, const float *input,
            int64_t rows, const int32_t *sentences, const float *states,
            int64_t stateRows, const int32_t *parents, float *nextStates,
            float *output) const;

private:
  /// o = tanh(LN(s~ Ws) + LN(c Wc)) and the output from the projection's
  /// z and the input; zero at padded rows when lengths are given.
  void combine(const float *input, int64_t rows, Trace &trace,
               float *output) const;
  /// Given the gradient dA of o's pre-activation: through the context
  /// projection and the attention, ADDING into dStates and dMemory.
  void attentionBackward(AdditiveAttention::Keys &keys, Trace &trace,
                         const float *dA, float *dStates,
                         float *dMemory) const;

  int64_t inputWidth, width;
  WeaklyRecurrentOptions options;
  NormedProjection projection;
  CellLayer scan;
  NormedProjection stateProjection;
  std::unique_ptr<AdditiveAttention> attention;
  std::unique_ptr<NormedProjection> contextProjection;
};

} // namespace models

#endif
