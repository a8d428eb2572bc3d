//===- models/common/ContextAwareEncoder.h - CA encoder ---------*- C++ -*-===//
//
// The context-aware encoder of the ATR paper (§4.3, after Zhang et al.
// 2017b): a backward cell layer over the input, then a forward cell layer
// over each position's input and backward state, [x_i ; <-h_i]; the
// annotations are the forward layer's states, H wide (a bidirectional
// encoder's are 2H). Parameters PREFIX.bwd.* and PREFIX.fwd.*. The forward
// layer's cell may differ (a two-input cell reads x_i and <-h_i apart).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_CONTEXTAWAREENCODER_H
#define CELLC_MODELS_COMMON_CONTEXTAWAREENCODER_H

#include "models/common/CellLayer.h"

#include <string>
#include <vector>

namespace models {

class ContextAwareEncoder {
public:
  struct Trace {
    CellTrace backward, forward;
    /// The backward layer's states [T, B, H] (squashed: tanh of them).
    std::vector<float> backwardStates;
    int64_t T = 0, B = 0;
  };

  /// `upperCell` (default `cell`) runs the forward layer; with `squash` it
  /// reads tanh of the backward states (an ATR state is unbounded).
  ContextAwareEncoder(const cellrt::Cell &cell, const std::string &prefix,
                      int64_t inputWidth, int64_t stateSize, ParamStore &store,
                      const cellrt::Cell *upperCell = nullptr,
                      bool squash = false);

  int64_t outputWidth() const { return forwardLayer.outputWidth(); }
  /// 0: the forward (upper) layer, 1: the backward (lower) one.
  CellLayer &layer(int64_t d) { return d == 0 ? forwardLayer : backwardLayer; }

  /// input [T, B, inputWidth] (alive until backward); output
  /// [T, B, outputWidth()] is written, zeros at padded steps.
  void forward(const float *input, const int32_t *lengths, int64_t T,
               int64_t B, float *output, Trace &trace, bool train) const;
  /// ACCUMULATES dInput (null: not wanted) and the params' gradients.
  void backward(Trace &trace, const float *dOutput, float *dInput) const;

private:
  CellLayer backwardLayer, forwardLayer;
  bool squash;
};

} // namespace models

#endif
