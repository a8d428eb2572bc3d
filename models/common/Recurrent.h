//===- models/common/Recurrent.h - Stacked, bidirectional cells -*- C++ -*-===//
//
// A sequence encoder of cell layers over one input [T, B, in]: each layer
// runs forward in time, backward, or both ways with its two outputs
// concatenated ([fwd ; bwd] per position); layer l reads layer l-1's
// output, and from `residualFrom` on adds it to its own (GNMT's residual
// connections). Parameters are `PREFIX.lL.fwd.*` and `PREFIX.lL.bwd.*`, or
// whatever names the model gives (the NMT encoder keeps its first
// checkpoints' `encoder_fwd.*`).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_RECURRENT_H
#define CELLC_MODELS_COMMON_RECURRENT_H

#include "models/common/CellLayer.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace models {

/// Which way in time a layer runs.
enum class LayerDirection { Forward, Backward, Both };

struct EncoderShape {
  int64_t inputWidth = 0, stateSize = 0;
  int64_t layers = 1;
  bool bidirectional = false;
  /// One per layer; when given, it replaces `layers` and `bidirectional`
  /// (GNMT: a bidirectional layer, then forward ones; DeepLAU: layers
  /// alternating backward and forward).
  std::vector<LayerDirection> directions = {};
  /// Layers l >= residualFrom (0-based; negative: none) add their input to
  /// their output at each sequence's steps; their widths must be equal.
  int64_t residualFrom = -1;
  /// Layer l + 1 reads tanh of layer l's output (after its residual sum):
  /// an ATR state is unbounded, and the layer above would read it raw
  /// (the top layer's output is left as it is: its reader squashes it).
  bool squashBetweenLayers = false;
};

class SequenceEncoder {
public:
  struct Trace {
    /// Per layer, per direction.
    std::vector<std::vector<CellTrace>> cells;
    /// Per layer: each direction's output, and their concatenation.
    std::vector<std::vector<std::vector<float>>> directionOutputs;
    std::vector<std::vector<float>> outputs;
    /// Per layer but the top, with squashBetweenLayers: tanh(outputs[l]).
    std::vector<std::vector<float>> squashed;
    const float *input = nullptr;
    const int32_t *lengths = nullptr;
    int64_t T = 0, B = 0;
  };

  /// The parameter prefix of layer `layer`'s direction `direction` (0
  /// forward, 1 backward).
  using LayerNames =
      std::function<std::string(int64_t layer, int64_t direction)>;

  /// Layers named PREFIX.lL.fwd and PREFIX.lL.bwd.
  SequenceEncoder(const cellrt::Cell &cell, const std::string &prefix,
                  const EncoderShape &shape, ParamStore &store);
  SequenceEncoder(const cellrt::Cell &cell, const EncoderShape &shape,
                  ParamStore &store, const LayerNames &names);

  int64_t outputWidth() const { return widths.back(); }
  int64_t numLayers() const { return int64_t(cells.size()); }
  /// Layer l's cells: 1 (forward or backward) or 2 (forward, backward).
  int64_t numCells(int64_t l) const { return int64_t(cells[l].size()); }
  /// Layer l's cell d (in a bidirectional layer, 0 forward, 1 backward).
  const CellLayer &layer(int64_t l, int64_t d) const { return *cells[l][d]; }
  CellLayer &layer(int64_t l, int64_t d) { return *cells[l][d]; }
  /// The lowest layer's cell running backward (or forward), or nullptr.
  CellLayer *lowestCell(bool reverse);

  /// input [T, B, inputWidth]; output [T, B, outputWidth()] is written
  /// (zeros at padded steps). The input must stay alive until backward.
  void forward(const float *input, const int32_t *lengths, int64_t T,
               int64_t B, float *output, Trace &trace, bool train) const;
  /// ACCUMULATES dInput (null: not wanted) and the params' gradients.
  void backward(Trace &trace, const float *dOutput, float *dInput) const;

  /// The final state k of layer l's direction d after forward, [B, width].
  const std::vector<float> &finalState(const Trace &trace, int64_t l,
                                       int64_t d, size_t k = 0) const {
    return trace.cells[l][d].finalStates[k];
  }

private:
  /// Adds each sequence's steps of `from` [T, B, width] into `to`.
  static void addValidSteps(const float *from, const int32_t *lengths,
                            int64_t T, int64_t B, int64_t width, float *to);

  std::vector<std::vector<std::unique_ptr<CellLayer>>> cells;
  std::vector<bool> residual;
  bool squash = false;
  /// widths[l]: the input width of layer l; widths.back(): the output's.
  std::vector<int64_t> widths;
};

} // namespace models

#endif
