//===- models/common/ContextAwareEncoder.cpp - CA encoder ----------------===//

#include "models/common/ContextAwareEncoder.h"

#include <algorithm>

namespace models {

ContextAwareEncoder::ContextAwareEncoder(const cellrt::Cell &cell,
                                         const std::string &prefix,
                                         int64_t inputWidth, int64_t stateSize,
                                         ParamStore &store)
    : inputWidth(inputWidth),
      backwardLayer(cell, prefix + ".bwd", inputWidth, stateSize, store,
                    /*reverse=*/true),
      forwardLayer(cell, prefix + ".fwd",
                   inputWidth + backwardLayer.outputWidth(), stateSize,
                   store) {}

void ContextAwareEncoder::forward(const float *input, const int32_t *lengths,
                                  int64_t T, int64_t B, float *output,
                                  Trace &trace, bool train) const {
  const int64_t H = backwardLayer.outputWidth(), width = inputWidth + H;
  trace.T = T;
  trace.B = B;
  trace.backwardStates.assign(T * B * H, 0.f);
  backwardLayer.forward({{input}, lengths, T, B, {}, trace.backwardStates.data()},
                        trace.backward, train);
  trace.joined.resize(T * B * width);
  for (int64_t r = 0; r < T * B; ++r) {
    std::copy_n(input + r * inputWidth, inputWidth,
                trace.joined.data() + r * width);
    std::copy_n(trace.backwardStates.data() + r * H, H,
                trace.joined.data() + r * width + inputWidth);
  }
  forwardLayer.forward({{trace.joined.data()}, lengths, T, B, {}, output},
                       trace.forward, train);
}

void ContextAwareEncoder::backward(Trace &trace, const float *dOutput,
                                   float *dInput) const {
  const int64_t rows = trace.T * trace.B, H = backwardLayer.outputWidth(),
                width = inputWidth + H;
  std::vector<float> dJoined(rows * width, 0.f);
  forwardLayer.backward(trace.forward, dOutput, {dJoined.data()});
  std::vector<float> dStates(rows * H);
  for (int64_t r = 0; r < rows; ++r) {
    if (dInput)
      for (int64_t j = 0; j < inputWidth; ++j)
        dInput[r * inputWidth + j] += dJoined[r * width + j];
    std::copy_n(dJoined.data() + r * width + inputWidth, H,
                dStates.data() + r * H);
  }
  backwardLayer.backward(trace.backward, dStates.data(), {dInput});
}

} // namespace models
