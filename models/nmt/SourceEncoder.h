//===- models/nmt/SourceEncoder.h - NMT's source encoders -------*- C++ -*-===//
//
// The encoder an NMT architecture uses (--arch):
//   rnnsearch  one bidirectional layer, annotations [fwd ; bwd], 2H wide
//              (parameters encoder_fwd.*, encoder_bwd.*, as the first
//              checkpoints have them);
//   ca         the ATR paper's context-aware encoder (§4.3): a backward
//              layer, then a forward one over [x ; backward state];
//              annotations H wide (encoder.bwd.*, encoder.fwd.*);
//   gnmt       GNMT (Wu et al. 2016; ATR paper §4.2): a bidirectional
//              layer, then forward layers, residual from the third on;
//              annotations the top layer's (H wide from two layers on);
//   deep       DeepLAU (LAU paper §3.4): layer l runs in direction (-1)^l
//              (backward first) over the layer below, no concatenation;
//              annotations the top layer's, H wide;
//   cseq2seq-1 RNNSearch's encoder (the model replaces the attention);
//   cseq2seq-2 Cseq2seq-II (§4): one cell layer `encoder` whose params run
//              backward over the source here (Eq. 10: the annotations, H
//              wide, whose first position gives s_0) and forward in the
//              model's cyclic context (Eq. 9).
// Deep encoders' parameters are encoder.lL.fwd.* / encoder.lL.bwd.*.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_SOURCEENCODER_H
#define CELLC_MODELS_NMT_SOURCEENCODER_H

#include "models/common/ContextAwareEncoder.h"
#include "models/common/Recurrent.h"
#include "models/nmt/TranslationModel.h"

#include <memory>
#include <string>
#include <vector>

namespace nmt {

/// The architectures --arch accepts.
std::vector<std::string> architectures();
/// Whether the architecture stacks layers (--enc-layers, --dec-layers).
bool isDeepArchitecture(const std::string &arch);
/// Whether the context comes from a cell re-reading the source (Cseq2seq-I
/// and -II) instead of attention.
bool isCyclicArchitecture(const std::string &arch);

class SourceEncoder {
public:
  /// Throws models::DataError for an unknown architecture or a layer count
  /// it cannot take.
  /// `twoSourceCell` runs ca's forward layer (null: `cell`).
  /// The encoder of `config` (its arch, encLayers with 0 resolved,
  /// deepFirst and betweenLayers).
  SourceEncoder(const ModelConfig &config, const cellrt::Cell &cell,
                int64_t inputWidth, int64_t stateSize,
                models::ParamStore &store,
                const cellrt::Cell *twoSourceCell = nullptr);

  int64_t outputWidth() const;
  /// input [T, B, inputWidth] (alive until backward) to the annotations'
  /// pre-activations [T, B, outputWidth()].
  void forward(const float *input, const int32_t *lengths, int64_t T,
               int64_t B, float *output, bool train);
  /// ACCUMULATES dInput and the params' gradients.
  void backward(const float *dOutput, float *dInput);
  /// The lowest layer that runs forward in time (direction 0) or backward
  /// (1), or nullptr (nmt analyze probes these).
  models::CellLayer *layer(int64_t direction);
  /// Cseq2seq-II's encoder layer (forward), whose params other layers
  /// share; nullptr in other architectures.
  const models::CellLayer *sharedLayer() const { return shared.get(); }

private:
  std::unique_ptr<models::SequenceEncoder> stacked;
  std::unique_ptr<models::ContextAwareEncoder> contextAware;
  /// Cseq2seq-II: the encoder layer, and the same params run backward.
  std::unique_ptr<models::CellLayer> shared, sharedBackward;
  models::CellTrace sharedTrace;
  models::SequenceEncoder::Trace stackedTrace;
  models::ContextAwareEncoder::Trace contextAwareTrace;
};

} // namespace nmt

#endif
