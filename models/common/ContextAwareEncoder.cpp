//===- models/common/ContextAwareEncoder.cpp - CA encoder ----------------===//

#include "models/common/ContextAwareEncoder.h"

#include "models/common/Math.h"

namespace models {

ContextAwareEncoder::ContextAwareEncoder(const cellrt::Cell &cell,
                                         const std::string &prefix,
                                         int64_t inputWidth, int64_t stateSize,
                                         ParamStore &store,
                                         const cellrt::Cell *upperCell,
                                         bool squash)
    : backwardLayer(cell, prefix + ".bwd", inputWidth, stateSize, store,
                    /*reverse=*/true),
      forwardLayer(upperCell ? *upperCell : cell, prefix + ".fwd",
                   {inputWidth, backwardLayer.outputWidth()}, stateSize,
                   store),
      squash(squash) {}

void ContextAwareEncoder::forward(const float *input, const int32_t *lengths,
                                  int64_t T, int64_t B, float *output,
                                  Trace &trace, bool train) const {
  const int64_t H = backwardLayer.outputWidth();
  trace.T = T;
  trace.B = B;
  trace.backwardStates.assign(T * B * H, 0.f);
  backwardLayer.forward({{input}, lengths, T, B, {}, trace.backwardStates.data()},
                        trace.backward, train);
  if (squash) // tanh(0) = 0 at padded steps
    tanhInPlace(trace.backwardStates.data(), T * B * H);
  // The forward layer's two sources: x_i and the backward state.
  forwardLayer.forward(
      {{input, trace.backwardStates.data()}, lengths, T, B, {}, output},
      trace.forward, train);
}

void ContextAwareEncoder::backward(Trace &trace, const float *dOutput,
                                   float *dInput) const {
  const int64_t rows = trace.T * trace.B, H = backwardLayer.outputWidth();
  std::vector<float> dStates(rows * H, 0.f);
  forwardLayer.backward(trace.forward, dOutput, {dInput, dStates.data()});
  if (squash)
    tanhBackward(trace.backwardStates.data(), dStates.data(), rows * H);
  backwardLayer.backward(trace.backward, dStates.data(), {dInput});
}

} // namespace models
