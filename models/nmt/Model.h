//===- models/nmt/Model.h - RNNSearch over compiled cells -------*- C++ -*-===//
//
// The attention-based encoder-decoder of Bahdanau et al. as configured in
// the ATR paper (appendix A.1), with every recurrence run by a cellc-compiled
// cell through cellrt:
//
//   encoder   h_i = [fwd(x)_i ; bwd(x)_i]          (Cell::forward, reverse)
//   annot.    a_i = tanh(h_i)                      (always; see README)
//   init      s_0 = tanh(Winit mean_i(a_i) + binit) (first state; others 0)
//   decoder   s~_j = Cell1(s_{j-1}, E[y_{j-1}])
//             e_ji = v . tanh(Wa s~_j + Ua a_i + ba), alpha = softmax_i(e)
//             c_j  = sum_i alpha_ji a_i
//             s_j  = Cell2(s~_j, c_j)
//   readout   t_j  = tanh(Ws tanh(s_j) + Wy E[y_{j-1}] + Wc c_j + bo)
//             p(y_j) = softmax(Wout dropout(t_j) + bout)
//
// Training runs each decoder step as a length-1 sequence through
// Cell::forward(args, tape) / backward (one Tape per step); decoding uses
// Cell::step with sourceRows for beam reordering. All other gradients are
// hand-written (models/common/Math.h).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_MODEL_H
#define CELLC_MODELS_NMT_MODEL_H

#include "models/common/CellLayer.h"
#include "models/common/Data.h"
#include "models/common/Math.h"

#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace nmt {
// The driver is built from the layer library in models/common.
using namespace models;

struct ModelConfig {
  std::string cell = "atr";
  int64_t srcVocab = 0, tgtVocab = 0;
  int64_t emb = 64, hidden = 128, att = 64, readout = 64;
  float dropout = 0.2f;
  /// The text of `cell` when it is a .cell file (models/common/Cells.h
  /// readCellSource): kept in the checkpoint, compiled instead of the file.
  std::string cellSource;
};

class Model {
public:
  Model(const ModelConfig &config, const cellrt::Cell &cell);

  /// Every parameter uniform in [-scale, scale].
  void initialize(Rng &rng, float scale);

  /// The summed cross-entropy of the batch's target tokens. With `backward`
  /// it also ACCUMULATES the gradient of the MEAN per-token loss into every
  /// Param::grad. Dropout is applied when dropoutRng is given.
  double loss(const Batch &batch, bool backward, Rng *dropoutRng);

  /// Beam search (beam 1 = greedy) over a source batch, scores normalised
  /// by length^lengthPenalty. Returns one id sequence (without </s>) per
  /// sentence.
  std::vector<std::vector<int32_t>> translate(const Batch &batch,
                                              int64_t beam, int64_t maxLength,
                                              float lengthPenalty);

  std::vector<Param *> params();
  int64_t parameterCount();
  const ModelConfig &getConfig() const { return config; }

  /// Test hook: drops the state gradient flowing from decoder cell 2 back
  /// into cell 1, so the gradient check can show it catches a real bug.
  bool breakGradientForTest = false;

private:
  Param &add(const std::string &name, std::vector<int64_t> shape);
  void encode(const Batch &batch, bool train);

  ModelConfig config;
  ParamStore store;
  std::unique_ptr<CellLayer> encF, encB, dec1, dec2;
  Param *Esrc, *Etgt, *Winit, *binit, *Wa, *Ua, *ba, *va, *Ws, *Wy, *Wc, *bo,
      *Wout, *bout;

  // Workspace of the last encode().
  int64_t C = 0;
  std::vector<float> xs, hf, hb, ann, mean, s0, UH;
  // The [Ty*B, V] softmax arrays, kept between batches: allocating ~30 MB
  // afresh per batch cost more in page faults than the softmax itself.
  std::vector<float> logits, dLogits;
  cellrt::ForwardArgs argsF, argsB;
  cellrt::Tape tapeF, tapeB;
  std::vector<cellrt::Tape> tapes1, tapes2;
};

} // namespace nmt

#endif
