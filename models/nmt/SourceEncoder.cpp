//===- models/nmt/SourceEncoder.cpp - NMT's source encoders --------------===//

#include "models/nmt/SourceEncoder.h"

#include "models/common/Data.h"

namespace nmt {

using models::LayerDirection;

std::vector<std::string> architectures() {
  return {"rnnsearch",  "ca",         "gnmt", "deep",
          "cseq2seq-1", "cseq2seq-2", "srnmt"};
}

bool isCyclicArchitecture(const std::string &arch) {
  return arch == "cseq2seq-1" || arch == "cseq2seq-2";
}

bool isDeepArchitecture(const std::string &arch) {
  return arch == "gnmt" || arch == "deep" || arch == "srnmt";
}

namespace {

/// GNMT's encoder: bidirectional, then forward; residual from layer 3.
models::EncoderShape gnmtShape(int64_t inputWidth, int64_t stateSize,
                               int64_t layers) {
  models::EncoderShape shape{inputWidth, stateSize};
  shape.directions.assign(layers, LayerDirection::Forward);
  shape.directions[0] = LayerDirection::Both;
  shape.residualFrom = 2;
  return shape;
}

/// DeepLAU's encoder: d = (-1)^l for layers l = 1..N, where d = -1 reads
/// h_{t-1}: the first layer runs forward (LAU §3.4), or backward when
/// `firstBackward` (the direction `deep` had before 2026-11-28).
models::EncoderShape alternatingShape(int64_t inputWidth, int64_t stateSize,
                                      int64_t layers, bool firstBackward) {
  models::EncoderShape shape{inputWidth, stateSize};
  for (int64_t l = 1; l <= layers; ++l)
    shape.directions.push_back((l % 2 == 1) == firstBackward
                                   ? LayerDirection::Backward
                                   : LayerDirection::Forward);
  return shape;
}

} // namespace

SourceEncoder::SourceEncoder(const ModelConfig &config,
                             const cellrt::Cell &cell, int64_t inputWidth,
                             int64_t stateSize, models::ParamStore &store,
                             const cellrt::Cell *twoSourceCell) {
  const std::string &arch = config.arch;
  const int64_t layers = config.encLayers;
  const bool squash = config.betweenLayers == "tanh";
  if (!isDeepArchitecture(arch) && layers != 1)
    throw models::DataError("--arch " + arch + " has one encoder layer (" +
                            std::to_string(layers) +
                            " asked); stacks: --arch gnmt or deep");
  if (isDeepArchitecture(arch) && (layers < 1 || layers > 16))
    throw models::DataError("--enc-layers: 1 to 16, not " +
                            std::to_string(layers));
  if (arch == "rnnsearch" || arch == "cseq2seq-1") {
    // The first checkpoints' names.
    auto names = [](int64_t, int64_t direction) {
      return std::string(direction == 0 ? "encoder_fwd" : "encoder_bwd");
    };
    stacked = std::make_unique<models::SequenceEncoder>(
        cell, models::EncoderShape{inputWidth, stateSize, 1, true}, store,
        names);
  } else if (arch == "ca") {
    contextAware = std::make_unique<models::ContextAwareEncoder>(
        cell, "encoder", inputWidth, stateSize, store, twoSourceCell, squash);
  } else if (arch == "cseq2seq-2") {
    shared = std::make_unique<models::CellLayer>(cell, "encoder", inputWidth,
                                                 stateSize, store);
    sharedBackward = std::make_unique<models::CellLayer>(
        models::CellLayer::sharing(*shared, /*reverse=*/true));
  } else if (arch == "gnmt" || arch == "deep") {
    models::EncoderShape shape =
        arch == "gnmt" ? gnmtShape(inputWidth, stateSize, layers)
                       : alternatingShape(inputWidth, stateSize, layers,
                                          config.deepFirst == "backward");
    shape.squashBetweenLayers = squash;
    stacked = std::make_unique<models::SequenceEncoder>(cell, "encoder",
                                                        shape, store);
  } else {
    throw models::DataError("unknown architecture '" + arch +
                            "' (rnnsearch, ca, gnmt, deep, cseq2seq-1 or cseq2seq-2)");
  }
}

int64_t SourceEncoder::outputWidth() const {
  if (shared)
    return shared->outputWidth();
  return stacked ? stacked->outputWidth() : contextAware->outputWidth();
}

void SourceEncoder::forward(const float *input, const int32_t *lengths,
                            int64_t T, int64_t B, float *output, bool train) {
  if (shared)
    sharedBackward->forward({{input}, lengths, T, B, {}, output}, sharedTrace,
                            train);
  else if (stacked)
    stacked->forward(input, lengths, T, B, output, stackedTrace, train);
  else
    contextAware->forward(input, lengths, T, B, output, contextAwareTrace,
                          train);
}

void SourceEncoder::backward(const float *dOutput, float *dInput) {
  if (shared)
    sharedBackward->backward(sharedTrace, dOutput, {dInput});
  else if (stacked)
    stacked->backward(stackedTrace, dOutput, dInput);
  else
    contextAware->backward(contextAwareTrace, dOutput, dInput);
}

models::CellLayer *SourceEncoder::layer(int64_t direction) {
  if (shared)
    return direction == 1 ? sharedBackward.get() : nullptr;
  return stacked ? stacked->lowestCell(direction == 1)
                 : &contextAware->layer(direction);
}

} // namespace nmt
