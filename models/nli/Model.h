//===- models/nli/Model.h - Natural language inference models ---*- C++ -*-===//
//
// Two models over the layer library:
//   attention  Rocktaeschel et al. (2016), the NLI model of the ATR paper
//              (A.2.2): a premise encoder (a compiled cell), a hypothesis
//              encoder started from the premise's final states, word-by-word
//              attention giving h*, and a 3-way softmax on dropout(h*);
//   bow        the baseline: the mean embedding u of the premise and v of
//              the hypothesis, features [u; v; |u - v|; u * v], a tanh
//              layer and the 3-way softmax.
// Dropout applies to the embeddings and before the classifier.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NLI_MODEL_H
#define CELLC_MODELS_NLI_MODEL_H

#include "models/common/CellLayer.h"
#include "models/common/Dropout.h"
#include "models/common/Embedding.h"
#include "models/common/Linear.h"
#include "models/common/WordByWordAttention.h"

#include <memory>
#include <string>
#include <vector>

namespace nli {

struct ModelConfig {
  std::string kind = "attention"; // attention | bow
  std::string cell = "atr";
  int64_t vocab = 0, emb = 100, hidden = 100;
  float dropout = 0.15f;
  /// The attention reads tanh of the encoders' states (an ATR state is
  /// unbounded), or them raw (before 2026-11-28; checkpoints of then).
  bool squashStates = true;
  /// The text of `cell` when it is a .cell file, kept in the checkpoint
  /// (models/common/Cells.h readCellSource).
  std::string cellSource;
};

/// Sentence pairs as ids, padded and time-major.
struct Batch {
  int64_t B = 0, L = 0, N = 0;
  std::vector<int32_t> premise, hypothesis; // [L, B], [N, B]
  std::vector<int32_t> premiseLengths, hypothesisLengths, labels;
};

/// One example: token ids and a label (-1 when unlabelled).
struct Example {
  std::vector<int32_t> premise, hypothesis;
  int32_t label = -1;
};

Batch makeBatch(const std::vector<Example> &examples,
                const std::vector<int64_t> &indices);

class Model {
public:
  /// `cell` is needed for the attention model only.
  Model(const ModelConfig &config, const cellrt::Cell *cell);

  /// Every param from `seed` (models/common/Init.h).
  void initialize(uint64_t seed, const cellrt::InitScheme &fallback);
  /// The summed cross-entropy of the batch; with `train` it also
  /// ACCUMULATES the gradient of the mean loss into every parameter.
  /// Dropout is applied when dropoutRng is given. `predictions` (if given)
  /// gets each pair's most likely label.
  double loss(const Batch &batch, bool train, models::Rng *dropoutRng,
              std::vector<int32_t> *predictions = nullptr);

  models::ParamStore &params() { return store; }
  const ModelConfig &getConfig() const { return config; }
  models::Embedding &embedding() { return *words; }
  /// Parameters of the recurrent part (encoders and attention): the
  /// paper's comparison between cells.
  int64_t recurrentParameterCount() const;

private:
  /// Embeddings (after dropout) of both sentences, and their backward.
  void embed(const Batch &batch, models::Rng *rng);
  void embedBackward(const Batch &batch, std::vector<float> &dPremiseEmb,
                     std::vector<float> &dHypothesisEmb);
  /// h* [B, width] for the classifier; backward given dFeatures.
  void attentionForward(const Batch &batch, bool train, models::Rng *rng);
  void attentionBackward(const Batch &batch, const float *dFeatures);
  void bowForward(const Batch &batch, models::Rng *rng);
  void bowBackward(const Batch &batch, const float *dFeatures);

  ModelConfig config;
  models::ParamStore store;
  std::unique_ptr<models::Embedding> words;
  std::unique_ptr<models::CellLayer> premiseEncoder, hypothesisEncoder;
  std::unique_ptr<models::WordByWordAttention> attention;
  std::unique_ptr<models::Linear> hiddenLayer, classifier;
  models::Dropout dropout;

  // Workspace of the last forward.
  std::vector<float> premiseEmb, hypothesisEmb, Y, H, features, logits;
  /// What the attention reads: tanh(Y), tanh(H) (squashStates), else Y, H.
  std::vector<float> attendedY, attendedH;
  std::vector<float> bowInput, bowHidden;
  std::vector<float> maskPremise, maskHypothesis, maskFeatures;
  models::CellTrace premiseTrace, hypothesisTrace;
  models::WordByWordAttention::Cache cache;
};

} // namespace nli

#endif
