//===- models/nmt/SourceEncoder.cpp - NMT's source encoders --------------===//

#include "models/nmt/SourceEncoder.h"

#include "models/common/Data.h"

namespace nmt {

std::vector<std::string> architectures() { return {"rnnsearch", "ca"}; }

SourceEncoder::SourceEncoder(const std::string &arch, const cellrt::Cell &cell,
                             int64_t inputWidth, int64_t stateSize,
                             models::ParamStore &store) {
  if (arch == "rnnsearch") {
    // The first checkpoints' names.
    auto names = [](int64_t, int64_t direction) {
      return std::string(direction == 0 ? "encoder_fwd" : "encoder_bwd");
    };
    bidirectional = std::make_unique<models::SequenceEncoder>(
        cell, models::EncoderShape{inputWidth, stateSize, 1, true}, store,
        names);
  } else if (arch == "ca") {
    contextAware = std::make_unique<models::ContextAwareEncoder>(
        cell, "encoder", inputWidth, stateSize, store);
  } else {
    throw models::DataError("unknown architecture '" + arch +
                            "' (rnnsearch or ca)");
  }
}

int64_t SourceEncoder::outputWidth() const {
  return bidirectional ? bidirectional->outputWidth()
                       : contextAware->outputWidth();
}

void SourceEncoder::forward(const float *input, const int32_t *lengths,
                            int64_t T, int64_t B, float *output, bool train) {
  if (bidirectional)
    bidirectional->forward(input, lengths, T, B, output, bidirectionalTrace,
                           train);
  else
    contextAware->forward(input, lengths, T, B, output, contextAwareTrace,
                          train);
}

void SourceEncoder::backward(const float *dOutput, float *dInput) {
  if (bidirectional)
    bidirectional->backward(bidirectionalTrace, dOutput, dInput);
  else
    contextAware->backward(contextAwareTrace, dOutput, dInput);
}

models::CellLayer &SourceEncoder::layer(int64_t direction) {
  return bidirectional ? bidirectional->layer(0, direction)
                       : contextAware->layer(direction);
}

} // namespace nmt
