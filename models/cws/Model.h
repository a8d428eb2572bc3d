//===- models/cws/Model.h - Character BiRNN + CRF tagger --------*- C++ -*-===//
//
// The segmenter of the ATR paper (appendix A.2.3), every layer from the
// layer library (models/common):
//
//   x_t = [dropout(E[c_t]) ; f_t]               character embeddings and
//                                               word-list features (if any)
//   h_t = dropout([fwd(x)_t ; bwd(x)_t])        a bidirectional compiled cell
//   s_t = W h_t + b                             emission scores for B/M/E/S
//   loss = max_y [s(y) + cost * #(y_t != y*_t)] - s(y*)   (LinearChainCrf)
//
// decoded by Viterbi. The CRF's negative log-likelihood can stand in for
// the max-margin loss (`loss`).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_CWS_MODEL_H
#define CELLC_MODELS_CWS_MODEL_H

#include "models/common/Crf.h"
#include "models/common/Dropout.h"
#include "models/common/Embedding.h"
#include "models/common/Linear.h"
#include "models/common/Recurrent.h"
#include "models/cws/Batch.h"

#include <string>
#include <vector>

namespace cws {

struct ModelConfig {
  std::string cell = "atr";
  int64_t vocab = 0, emb = 300, hidden = 300, layers = 1;
  /// Layer l + 1 reads tanh of layer l's states (an ATR state is
  /// unbounded).
  bool squashBetweenLayers = true;
  /// Word-list features per character, after the embedding (0: none).
  int64_t features = 0;
  float dropout = 0.2f;
  models::CrfLoss loss = models::CrfLoss::MaxMargin;
  /// The max-margin loss's cost of each wrong tag.
  float hammingCost = 0.2f;
};

class Model {
public:
  Model(const ModelConfig &config, const cellrt::Cell &cell);

  /// Every param from `seed` (models/common/Init.h).
  void initialize(uint64_t seed, const cellrt::InitScheme &fallback);

  /// The summed loss of the batch's sentences. With `backward` it also
  /// ACCUMULATES the gradient of the MEAN per-sentence loss into every
  /// Param::grad. Dropout is applied when dropoutRng is given.
  double loss(const CharBatch &batch, bool backward, Rng *dropoutRng);
  /// The Viterbi tags of every sentence of the batch.
  std::vector<std::vector<int32_t>> decode(const CharBatch &batch);

  std::vector<models::Param *> params() { return store.all(); }
  int64_t parameterCount() const { return store.count(); }
  /// The recurrent layers' share of parameterCount().
  int64_t recurrentParameterCount();
  const ModelConfig &getConfig() const { return config; }

  /// Test hook: drops the gradient flowing into the backward direction, so
  /// the gradient check can show it catches a real bug.
  bool breakGradientForTest = false;

private:
  /// Embeddings, encoder, dropout and emission scores into `scores`.
  void forward(const CharBatch &batch, bool train, Rng *dropoutRng);
  /// From dScores (the mean loss's) down to the embeddings.
  void backpropagate(const CharBatch &batch);

  ModelConfig config;
  models::ParamStore store;
  models::Embedding embedding;
  models::SequenceEncoder encoder;
  models::Linear emission;
  models::LinearChainCrf crf;
  models::Dropout dropout;

  // Workspace of the last forward: [T*B, emb], [T*B, emb + features],
  // [T*B, 2 hidden], [T*B, 4].
  std::vector<float> embedded, inputs, encoded, scores;
  std::vector<float> dScores, dEncoded, dInputs, dEmbedded;
  std::vector<float> embeddedMask, encodedMask;
  models::SequenceEncoder::Trace trace;
};

} // namespace cws

#endif
