//===- models/nmt/Srnmt.h - SR-NMT ------------------------------*- C++ -*-===//
//
// Di Gangi and Federico (2018), "Deep Neural Machine Translation with
// Weakly-Recurrent Units" (--arch srnmt): N encoder units and M decoder
// units of models/common/WeaklyRecurrent.h, each decoder unit attending the
// top encoder unit's output, then softmax(Wout dropout(s^M) + b). The
// units' highways add their inputs, so --emb must equal --hidden (d) unless
// --no-highway. Layer norms start as the identity. Every
// layer is one whole-sequence call in training (the scans are the only
// recurrence and read only inputs); decoding runs one step per layer over
// a beam's rows. Ablations (§6): --no-layernorm, --no-highway,
// --single-attention (only the top decoder unit attends; the others'
// deep output reads their state alone). Parameters src_embedding,
// tgt_embedding, encoder.lL.*, decoder.lL.*, output.*; --tie-output
// (SWord) makes the output weight the target embeddings.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_SRNMT_H
#define CELLC_MODELS_NMT_SRNMT_H

#include "models/common/Dropout.h"
#include "models/common/Embedding.h"
#include "models/common/WeaklyRecurrent.h"
#include "models/nmt/TranslationModel.h"

namespace nmt {

class BeamSearch;

class SrnmtModel : public TranslationModel {
public:
  /// Throws DataError when --emb != --hidden with highways, or the hidden
  /// width is odd.
  explicit SrnmtModel(const ModelConfig &config);

  void initialize(uint64_t seed, const cellrt::InitScheme &fallback) override;
  double loss(const models::Batch &batch, bool backward,
              models::Rng *dropoutRng) override;
  std::unique_ptr<IncrementalDecoder>
  startDecoding(const models::Batch &batch) override;
  int64_t targetVocabulary() const override { return config.tgtVocab; }
  std::vector<float> targetLogProbs(const models::Batch &batch) override;
  void recordProbes(ModelProbes *probes) override;
  std::vector<models::Param *> params() override;
  int64_t parameterCount() override;

private:
  /// The encoder over the batch's sources; every decoder unit's keys.
  void encode(const models::Batch &batch, bool train);
  void encodeBackward(const models::Batch &batch);
  /// logits [rows, V] from the top decoder output, without the output
  /// bias: the loss or log-softmax adds it (outputBiasOf).
  void outputForward(const float *top, int64_t rows, models::Rng *dropoutRng);
  /// startDecoding's decoder.
  class StepDecoder;
  /// One beam-search step of every decoder unit over the search's rows.
  void decodeStep(const BeamSearch &search,
                  std::vector<std::vector<float>> &states, int64_t stateRows);

  ModelConfig config;
  models::ParamStore store;
  models::Embedding sourceEmbedding, targetEmbedding;
  std::vector<std::unique_ptr<models::WeaklyRecurrentEncoderLayer>> encoder;
  std::vector<std::unique_ptr<models::WeaklyRecurrentDecoderLayer>> decoder;
  models::Linear output;
  models::Dropout outputDropout;

  // Workspace of the last batch.
  std::vector<float> sourceEmbedded, targetEmbedded;
  /// Each encoder unit's output [Tx, B, d], each decoder unit's [Ty, B, d].
  std::vector<std::vector<float>> encoderOutputs, decoderOutputs;
  std::vector<models::WeaklyRecurrentEncoderLayer::Trace> encoderTraces;
  std::vector<models::WeaklyRecurrentDecoderLayer::Trace> decoderTraces;
  std::vector<models::AdditiveAttention::Keys> keys;
  std::vector<float> dMemory;
  /// The logits (in training turned into their gradient in place) and the
  /// gradient's bf16 rounding stay allocated between updates (tens of MB:
  /// fresh pages would be faulted in and zeroed every update).
  std::vector<float> dropped, dropMask, logits;
  std::vector<uint16_t> roundedDLogits;
};

} // namespace nmt

#endif
