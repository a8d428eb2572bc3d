//===- models/nmt/TranslationModel.h - What a translation model does -*- C++
//-*-===//
//
// The interface the driver (training, decoding, checkpoints) uses, and the
// configuration every architecture reads: Model.h is RNNSearch and the
// architectures built on its conditional decoder, Srnmt.h SR-NMT.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_TRANSLATIONMODEL_H
#define CELLC_MODELS_NMT_TRANSLATIONMODEL_H

#include "models/common/CellLayer.h"
#include "models/common/Data.h"
#include "models/common/Linear.h"
#include "models/common/Losses.h"
#include "models/common/Math.h"
#include "models/common/Param.h"

#include <memory>
#include <string>
#include <vector>

namespace nmt {

struct ModelConfig {
  std::string cell = "atr";
  int64_t srcVocab = 0, tgtVocab = 0;
  int64_t emb = 64, hidden = 128, att = 64, readout = 64;
  float dropout = 0.2f;
  /// The text of `cell` when it is a .cell file (models/common/Cells.h
  /// readCellSource): kept in the checkpoint, compiled instead of the file.
  std::string cellSource;
  /// The architecture (SourceEncoder.h, Srnmt.h).
  std::string arch = "rnnsearch";
  /// Encoder layers and decoder layers (the conditional pair counts as one);
  /// 0: the architecture's default (gnmt, deep: 2; others: 1).
  int64_t encLayers = 0, decLayers = 0;

  /// Cseq2seq's context: last or mean (CyclicContext.h).
  std::string context = "last";
  /// Cseq2seq-II's SGRU: decoder cell 1 shares the encoder cell's params.
  bool shareCell = false;
  /// SWord: the output layer's weight is the target embedding table (needs
  /// readout = emb).
  bool tieOutput = false;
  /// The cell of the layers with two sources (ca's forward encoder layer,
  /// gnmt's decoder layers 2..M), read apart by a two-input cell; empty:
  /// `cell` over their concatenation. Its text, as cellSource.
  std::string cell2, cell2Source;
  /// SR-NMT's ablations (Srnmt.h): without layer norms, without the
  /// highways, with one attention (the top decoder layer's).
  bool noLayerNorm = false, noHighway = false, singleAttention = false;
  /// DeepLAU's first encoder layer: forward (LAU §3.4, d = (-1)^l with
  /// d = -1 forward) or backward (what `deep` ran before 2026-11-28, and
  /// what a checkpoint without the option was trained with).
  std::string deepFirst = "forward";
  /// What a layer reads of the layer below (stacked encoders and decoders,
  /// ca's forward layer) and what Cseq2seq's cyclic context passes on:
  /// tanh of it, or the raw state ("raw": before 2026-11-28, and what a
  /// checkpoint without the option was trained with). An ATR state is
  /// unbounded; attention and readout always read tanh of the top layer.
  std::string betweenLayers = "tanh";

  /// Replaces 0 layer counts by the architecture's default.
  void resolveLayers();
};

/// What every cell layer of the model records of its probes (nmt analyze):
/// the encoder's one call per batch ([Tx, B, len]), each decoder cell's one
/// call per target step ([1, B, len]).
struct ModelProbes {
  models::ProbeRecorder encoderForward, encoderBackward, decoder1, decoder2;
};

class BeamSearch;

/// A source batch being decoded (TranslationModel::startDecoding), one
/// target step per call.
class IncrementalDecoder {
public:
  virtual ~IncrementalDecoder() = default;
  /// log p(next word) [search.activeCount(), vocabulary] for the rows
  /// search.nextStep() listed, each continuing from its parent row's states
  /// of the previous call. Valid until the next call.
  virtual const float *step(const BeamSearch &search) = 0;
};

class TranslationModel {
public:
  virtual ~TranslationModel() = default;

  /// Every parameter uniform in [-scale, scale].
  /// Every param from `seed` (models/common/Init.h): its own initialiser,
  /// else `fallback`.
  virtual void initialize(uint64_t seed,
                          const cellrt::InitScheme &fallback) = 0;
  /// The summed cross-entropy of the batch's target tokens, label-smoothed
  /// by labelSmoothing() (models/common/Losses.h,
  /// smoothedCrossEntropyInPlace; padded steps count nothing). With `backward`
  /// it also ACCUMULATES the gradient of the MEAN per-token loss into every
  /// Param::grad. Dropout is applied when dropoutRng is given.
  virtual double loss(const models::Batch &batch, bool backward,
                      models::Rng *dropoutRng) = 0;
  /// Beam search (beam 1 = greedy) over a source batch, scores normalised
  /// by length^lengthPenalty. Returns one id sequence (without </s>) per
  /// sentence; with `scores`, also each hypothesis' normalised score.
  std::vector<std::vector<int32_t>>
  translate(const models::Batch &batch, int64_t beam, int64_t maxLength,
            float lengthPenalty, std::vector<double> *scores = nullptr);
  /// Encodes the batch's sources and starts decoding them step by step
  /// (beam search, ensembles: Ensemble.h). The decoder reads the model's
  /// encoding of this batch: one decoding per model at a time.
  virtual std::unique_ptr<IncrementalDecoder>
  startDecoding(const models::Batch &batch) = 0;
  /// The target vocabulary's size (the width of step()'s rows).
  virtual int64_t targetVocabulary() const = 0;
  /// Forced decoding: log p(tgtOut[j, b]) for every target step [Ty, B]
  /// (padded steps included). Decoding and training share no code above
  /// the cells, so the tests check each against the other with this.
  virtual std::vector<float> targetLogProbs(const models::Batch &batch) = 0;
  /// From now on inference forwards (loss without backward: forced
  /// decoding) run each recorder's probed cell and record into `probes`;
  /// null: stop. Throws DataError where the model has no such cells.
  virtual void recordProbes(ModelProbes *probes) = 0;
  /// From now on forced decoding writes every target step's attention
  /// weights into `alpha` as [Ty, Tx, B] (zero where masked); null: stop.
  /// Returns false, and records nothing, where the model has no single
  /// attention over the source (Cseq2seq-I's cyclic context, SR-NMT).
  virtual bool recordAttention(std::vector<float> *alpha) {
    (void)alpha;
    return false;
  }
  virtual std::vector<models::Param *> params() = 0;
  virtual int64_t parameterCount() = 0;

  /// eps of loss()'s label smoothing: (1 - eps) * -log p(target) + eps *
  /// the mean of -log p over the target vocabulary (0: none).
  void setLabelSmoothing(float eps) { smoothing = eps; }
  float labelSmoothing() const { return smoothing; }

  /// The product precision the model was built in (its cells were loaded
  /// in it): searchBatch decodes each model in its own. loss() and
  /// targetLogProbs() read the process's (one model at a time).
  cellrt::Precision precision() const { return builtPrecision; }

protected:
  float smoothing = 0;

private:
  const cellrt::Precision builtPrecision = models::productPrecision();
};

/// The output layer's bias as the loss adds it (models/common/Losses.h):
/// its values, and its gradient unless frozen; none without a bias.
models::LogitBias outputBiasOf(const models::Linear &output);

/// log p(tgtOut[r]) for every row r of the batch's [Ty * B, vocab] log-
/// probabilities (what a forced-decoding loss leaves in its logits).
std::vector<float> targetLogProbsOf(const float *logProbs,
                                    const models::Batch &batch, int64_t vocab);

/// The model `config.arch` names, over `cell` (and `twoSourceCell` for the
/// layers with two sources). Throws DataError for a configuration the
/// architecture cannot take.
std::unique_ptr<TranslationModel>
makeModel(const ModelConfig &config, const cellrt::Cell &cell,
          const cellrt::Cell *twoSourceCell = nullptr);

} // namespace nmt

#endif
