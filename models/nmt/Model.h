//===- models/nmt/Model.h - RNNSearch over compiled cells -------*- C++ -*-===//
//
// The attention-based encoder-decoder of Bahdanau et al. as configured in
// the ATR paper (appendix A.1), built from the layer library in
// models/common, with every recurrence run by a cellc-compiled cell:
//
//   encoder   h_i = [fwd(x)_i ; bwd(x)_i]          SequenceEncoder (bidir.)
//   annot.    a_i = tanh(h_i)                      (always; see README)
//   init      s_0 = tanh(Winit mean_i(a_i) + binit) Linear `init` (first
//                                                   state; others 0)
//   decoder   s~_j = Cell1(s_{j-1}, E[y_{j-1}])    CellLayer `decoder1`
//             c_j  = attend(s~_j; a)               AdditiveAttention
//             s_j  = Cell2(s~_j, c_j)              CellLayer `decoder2`
//   readout   t_j  = tanh(Ws tanh(s_j) + Wy E[y_{j-1}] + Wc c_j + bo)
//                                                  LinearSum `readout`
//             p(y_j) = softmax(Wout dropout(t_j) + bout)  Linear `output`
//
// Deep architectures (--arch gnmt|deep, SourceEncoder.h) stack the encoder
// and put decoder layers 2..M (CellLayers `decoder.lL`) above s_j: layer l
// reads [s^{l-1}_j ; c_j] (gnmt: the context goes to every layer, and from
// layer 3 on a layer adds its input's s^{l-1}_j to its output) or s^{l-1}_j
// alone (deep); the readout reads the top layer's output. The attention
// stays on the bottom layer, so the upper layers read nothing of their own
// past but their states: in training each runs as one whole sequence
// (DecoderStack.cpp), in decoding one step per layer.
//
// Cseq2seq-I (--arch cseq2seq-1, Context.cpp) replaces the attention by a
// cell that re-reads the annotations from tanh(V s~_j + b_0) at every step
// (models/common/CyclicContext.h): c_j is its last output (--context last)
// or their mean (--context mean), H wide. Cseq2seq-II (cseq2seq-2) re-reads
// the source embeddings with the encoder's own cell instead, and s_0 comes
// from the first position of the encoder run backward (not the mean).
//
// Training runs each decoder step as a length-1 sequence through
// CellLayer::forward (one CellTrace per step) and backpropagates them last
// step first; decoding runs CellLayer::step with a beam's parent rows
// (BeamSearch.h). The parameter names and their order are those of the
// first checkpoints, so they still load.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_MODEL_H
#define CELLC_MODELS_NMT_MODEL_H

#include "models/common/AdditiveAttention.h"
#include "models/common/CellLayer.h"
#include "models/common/CyclicContext.h"
#include "models/common/Data.h"
#include "models/common/Dropout.h"
#include "models/common/Embedding.h"
#include "models/common/Linear.h"
#include "models/common/LinearSum.h"
#include "models/common/Losses.h"
#include "models/common/Recurrent.h"
#include "models/nmt/SourceEncoder.h"
#include "models/nmt/TranslationModel.h"

#include <memory>
#include <string>
#include <vector>

namespace nmt {
// The driver is built from the layer library in models/common.
using namespace models;

class BeamSearch;

/// --context's pooling; throws DataError for another name.
CyclicContext::Pool cyclicPool(const std::string &name);

/// The data of each state array, as the layers take them.
template <typename T>
std::vector<T *> statePointers(std::vector<std::vector<float>> &states) {
  std::vector<T *> result;
  for (std::vector<float> &state : states)
    result.push_back(state.data());
  return result;
}

class Model : public TranslationModel {
public:
  /// `twoSourceCell` (config.cell2) runs the layers with two sources.
  Model(const ModelConfig &config, const cellrt::Cell &cell,
        const cellrt::Cell *twoSourceCell = nullptr);

  // TranslationModel.
  void initialize(uint64_t seed, const cellrt::InitScheme &fallback) override;
  double loss(const Batch &batch, bool backward, Rng *dropoutRng) override;
  std::unique_ptr<IncrementalDecoder>
  startDecoding(const Batch &batch) override;
  int64_t targetVocabulary() const override { return config.tgtVocab; }
  std::vector<float> targetLogProbs(const Batch &batch) override;
  /// Every recorder's `probed` must be set.
  void recordProbes(ModelProbes *probes) override;
  bool recordAttention(std::vector<float> *alpha) override;
  std::vector<Param *> params() override;
  int64_t parameterCount() override;
  const ModelConfig &getConfig() const { return config; }

  /// Test hook: drops the state gradient flowing from decoder cell 2 back
  /// into cell 1, so the gradient check can show it catches a real bug.
  bool breakGradientForTest = false;

private:
  /// What the readout keeps of `rows` decoder steps for its backward.
  struct Readout {
    std::vector<float> tanhState, hidden, dropped, dropMask, logits;
  };
  /// The decoder's states between steps, one array per cell state.
  using States = std::vector<std::vector<float>>;
  /// The gradients of the states around a decoder step (Decoder.cpp).
  struct StateGradients;
  /// What decoding keeps of its current step (Translate.cpp).
  struct DecodeStep;
  /// startDecoding's decoder (Translate.cpp).
  class StepDecoder;
  /// What one context computation keeps for its backward.
  struct ContextSlot {
    AdditiveAttention::Step attention;
    CyclicContext::Step cyclic;
  };
  /// The upper decoder layers' states before and after a decoding step,
  /// their inputs and outputs, and their weights stacked once per pass.
  struct UpperStep {
    std::vector<States> states, next;
    /// Per upper layer: its outputs, and (between layers squashed) tanh of
    /// the layer below's.
    std::vector<std::vector<float>> outputs, inputs;
    std::vector<cellrt::PackedWeights> packed;
  };

  // Shared by training and decoding (Model.cpp).
  /// Annotations, attention keys and s_0 of the batch's sources.
  void encode(const Batch &batch, bool train);
  /// Given the gradient of s_0, and dAnnotations as the attention left it.
  void encodeBackward(const Batch &batch, const float *dInitialState);
  /// logits [rows, V] from the decoder's output s, the previous words'
  /// embeddings y and the contexts c (each [rows, width]), without the
  /// output layer's bias: the loss or log-softmax adds it (outputBiasOf).
  void readoutForward(const float *s, const float *y, const float *c,
                      int64_t rows, Rng *dropoutRng, Readout &out) const;
  /// Given out.logits' gradient dLogits (and in bf16 its rounding, or
  /// null): writes (not adds) ds, dy and dc; the output bias's gradient is
  /// the loss's.
  void readoutBackward(const float *s, const float *y, const float *c,
                       int64_t rows, Readout &out, const float *dLogits,
                       const uint16_t *roundedDLogits, float *ds, float *dy,
                       float *dc) const;

  // The context c_j (Context.cpp).
  int64_t contextWidth() const;
  /// Of `rows` queries [rows, queryWidth] (row r reads sentence
  /// sentences[r]; null: row r's own) into context [rows, contextWidth()].
  void contextForward(const float *query, int64_t rows,
                      const int32_t *sentences, ContextSlot &slot,
                      float *context, bool train);
  /// Backward of a training contextForward: ADDS into dAnnotations, writes
  /// dQuery. The attention leaves its query weight's gradient in
  /// dProjectedQuery for queryWeightBackward (one GEMM for all steps).
  void contextBackward(const float *query, ContextSlot &slot,
                       const float *dContext, float *dQuery,
                       float *dProjectedQuery);

  // The teacher-forced decoder of training (Decoder.cpp).
  /// Over the batch's target inputs: out1, contexts and out2 [Ty, B, width].
  void decodeForward(const Batch &batch, bool train);
  /// Copies step j's attention weights [Tx, B] into attentionRecord.
  void recordStepAttention(int64_t j, int64_t Ty, int64_t B);
  /// Last step first, given the gradient of out2: ADDS into dEmbedded (the
  /// target embeddings'), dContexts and dAnnotations. Returns the gradient
  /// of the decoder's initial states.
  States decodeBackward(const Batch &batch, const float *dOut2,
                        float *dEmbedded, float *dContexts);
  /// Backward of step j: grads.after holds the gradient of its final
  /// states on entry and of its initial states on return.
  void decodeStepBackward(const Batch &batch, int64_t j, const float *dOut2,
                          float *dEmbedded, float *dContexts,
                          StateGradients &grads);

  // The decoder's layers 2..M (DecoderStack.cpp).
  /// Builds decoder layers 2..config.decLayers.
  void addUpperLayers(const cellrt::Cell &cell);
  /// The width of the output the readout reads (the top layer's).
  int64_t topWidth() const;
  /// Layer k's (0: decoder layer 2) sources: the state below and (gnmt)
  /// the context.
  std::vector<const float *> upperSources(size_t k, const float *below,
                                          const float *context) const;
  /// The upper layers over the teacher-forced steps; returns the top
  /// layer's output [Ty, B, width] (out2 itself when there is none).
  const float *upperForward(const Batch &batch, bool train);
  /// Given the top layer's output gradient: writes dOut2, ADDS into
  /// dContexts.
  void upperBackward(const Batch &batch, const float *dTop, float *dOut2,
                     float *dContexts);
  /// One decoding step of the upper layers over out2 and the contexts;
  /// returns the top layer's output.
  const float *upperStep(const BeamSearch &search, const float *out2,
                         const float *context, int64_t stateRows,
                         UpperStep &step);

  // Decoding (Translate.cpp).
  /// One beam-search step of the search's active rows: log-probabilities in
  /// step.readout.logits.
  void decodeStep(const BeamSearch &search,
                  const cellrt::PackedWeights &packed1,
                  const cellrt::PackedWeights &packed2, DecodeStep &step);

  ModelConfig config;
  const cellrt::Cell *twoSourceCell;
  ParamStore store;
  // In parameter order: the layers register themselves in `store`.
  Embedding sourceEmbedding, targetEmbedding;
  SourceEncoder encoder;
  CellLayer decoder1, decoder2;
  Linear init;
  /// The attention, or (cseq2seq-1) the cyclic context.
  std::unique_ptr<AdditiveAttention> attention;
  LinearSum readout;
  Linear output;
  Dropout readoutDropout;
  /// Decoder layers 2..M and whether each adds its input's s^{l-1}.
  std::vector<std::unique_ptr<CellLayer>> upper;
  std::vector<bool> upperResidual;
  std::unique_ptr<CyclicContext> cyclic;

  // Workspace of the last encode().
  /// The encoder's summary s_0 reads: the annotations' mean, or (Cseq2seq-
  /// II) their first position.
  std::vector<float> sourceEmbedded, annotations, summary, s0;
  std::vector<float> dSourceEmbedded;
  /// What the cyclic context re-reads: Cseq2seq-I the annotations,
  /// Cseq2seq-II the source embeddings (its input products made once).
  CyclicContext::Sequence cyclicSource;
  AdditiveAttention::Keys keys;
  std::vector<float> dAnnotations;
  // Workspace of the last teacher-forced decode ([Ty, B, width] arrays and
  // one trace and attention step per step).
  std::vector<int32_t> ones;
  std::vector<float> targetEmbedded, out1, contexts, out2;
  std::vector<CellTrace> traces1, traces2;
  std::vector<ContextSlot> contextSlots;
  /// recordAttention's array, or null.
  std::vector<float> *attentionRecord = nullptr;
  std::vector<float> dProjectedQueries;
  /// The two decoder cells' weights, stacked once per teacher-forced
  /// decode for its steps' forward and backward calls.
  cellrt::PackedWeights decoderWeights1, decoderWeights2;
  // The upper decoder layers' inputs, outputs and traces ([Ty, B, width]).
  std::vector<std::vector<float>> upperOutputs;
  /// With --between-layers tanh: tanh of what each upper layer reads.
  std::vector<std::vector<float>> upperInputs;
  std::vector<CellTrace> upperTraces;
  // The [Ty*B, V] softmax arrays, kept between batches: allocating ~30 MB
  // afresh per batch cost more in page faults than the softmax itself.
  // In training the loss turns the logits into their gradient in place,
  // and in bf16 also writes its rounding here for the output layer.
  Readout trainReadout;
  std::vector<uint16_t> roundedDLogits;
};

} // namespace nmt

#endif
