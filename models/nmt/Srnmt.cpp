//===- models/nmt/Srnmt.cpp - SR-NMT --------------------------------------===//

#include "models/nmt/Srnmt.h"

#include "models/common/Init.h"

#include "models/common/Cells.h"
#include "models/common/Losses.h"
#include "models/nmt/BeamSearch.h"

#include <algorithm>

namespace nmt {

using namespace models;

namespace {

const cellrt::Cell &gatedScan() {
  return loadCell("gated_scan.cell", gatedScanSource());
}

WeaklyRecurrentOptions unitOptions(const ModelConfig &config, bool attends) {
  WeaklyRecurrentOptions options;
  options.layerNorm = !config.noLayerNorm;
  options.highway = !config.noHighway;
  options.attention = attends;
  return options;
}

} // namespace

SrnmtModel::SrnmtModel(const ModelConfig &config)
    : config(config),
      sourceEmbedding(store, "src_embedding", config.srcVocab, config.emb),
      targetEmbedding(store, "tgt_embedding", config.tgtVocab, config.emb),
      output(config.tieOutput
                 ? Linear(store, "output", targetEmbedding.weights())
                 : Linear(store, "output", config.hidden, config.tgtVocab)),
      outputDropout(config.dropout) {
  const int64_t d = config.hidden;
  if (config.tieOutput && config.emb != d)
    throw DataError("--tie-output: the output layer reads --hidden (" +
                    std::to_string(d) +
                    ") values; the target embeddings "
                    "have --emb (" +
                    std::to_string(config.emb) + ")");
  if (config.emb != d && !config.noHighway)
    throw DataError("--arch srnmt: the units' highways add their inputs, so "
                    "--emb (" +
                    std::to_string(config.emb) + ") must equal --hidden (" +
                    std::to_string(d) + ")");
  // The first units read the embeddings (emb wide without highways).
  for (int64_t l = 1; l <= config.encLayers; ++l)
    encoder.push_back(std::make_unique<WeaklyRecurrentEncoderLayer>(
        gatedScan(), store, "encoder.l" + std::to_string(l),
        l == 1 ? config.emb : d, d, unitOptions(config, false)));
  for (int64_t l = 1; l <= config.decLayers; ++l) {
    bool attends = !config.singleAttention || l == config.decLayers;
    decoder.push_back(std::make_unique<WeaklyRecurrentDecoderLayer>(
        gatedScan(), store, "decoder.l" + std::to_string(l),
        l == 1 ? config.emb : d, d, d, config.att,
        unitOptions(config, attends)));
  }
}

void SrnmtModel::initialize(uint64_t seed, const cellrt::InitScheme &fallback) {
  // Layer norms start as the identity (their Param::init): random gains of
  // either sign would scale every unit down.
  models::initializeParams(store.all(), seed, fallback);
}

std::vector<Param *> SrnmtModel::params() { return store.all(); }

int64_t SrnmtModel::parameterCount() { return store.count(); }

void SrnmtModel::recordProbes(ModelProbes *probes) {
  if (probes)
    throw DataError("analyze: --arch srnmt has no cell layers to probe");
}

void SrnmtModel::encode(const Batch &batch, bool train) {
  const int64_t Tx = batch.Tx, B = batch.B, d = config.hidden;
  sourceEmbedded.resize(Tx * B * config.emb);
  sourceEmbedding.forward(batch.src.data(), Tx * B, sourceEmbedded.data());
  encoderOutputs.resize(encoder.size());
  encoderTraces.resize(encoder.size());
  const float *input = sourceEmbedded.data();
  for (size_t l = 0; l < encoder.size(); ++l) {
    encoderOutputs[l].resize(Tx * B * d);
    encoder[l]->forward(input, batch.srcLen.data(), Tx, B,
                        encoderOutputs[l].data(), encoderTraces[l], train);
    input = encoderOutputs[l].data();
  }
  keys.resize(decoder.size());
  for (size_t l = 0; l < decoder.size(); ++l)
    decoder[l]->precompute(input, batch.srcLen.data(), Tx, B, keys[l]);
}

void SrnmtModel::encodeBackward(const Batch &batch) {
  const int64_t rows = batch.Tx * batch.B, d = config.hidden;
  // dMemory: what every decoder unit's attention gave the top output.
  std::vector<float> dOutput = dMemory, dInput;
  for (size_t l = encoder.size(); l-- > 0;) {
    dInput.assign(rows * (l == 0 ? config.emb : d), 0.f);
    encoder[l]->backward(encoderTraces[l], dOutput.data(), dInput.data());
    dOutput.swap(dInput);
  }
  sourceEmbedding.backward(batch.src.data(), rows, dOutput.data());
}

void SrnmtModel::outputForward(const float *top, int64_t rows,
                               Rng *dropoutRng) {
  const int64_t d = config.hidden;
  dropped.assign(top, top + rows * d);
  outputDropout.forward(dropped.data(), rows * d, dropoutRng, dropMask);
  logits.resize(rows * config.tgtVocab);
  // The bias is added by the loss or log-softmax reading the logits.
  output.forwardWithoutBias(dropped.data(), rows, logits.data());
}

double SrnmtModel::loss(const Batch &batch, bool backward, Rng *dropoutRng) {
  const int64_t B = batch.B, Ty = batch.Ty, N = Ty * B, d = config.hidden;
  const int64_t V = config.tgtVocab;
  encode(batch, backward);
  targetEmbedded.resize(N * config.emb);
  targetEmbedding.forward(batch.tgtIn.data(), N, targetEmbedded.data());
  decoderOutputs.resize(decoder.size());
  decoderTraces.resize(decoder.size());
  const float *input = targetEmbedded.data();
  for (size_t l = 0; l < decoder.size(); ++l) {
    decoderOutputs[l].resize(N * d);
    decoder[l]->forward(keys[l], input, batch.tgtLen.data(), Ty, B,
                        decoderOutputs[l].data(), decoderTraces[l], backward);
    input = decoderOutputs[l].data();
  }
  outputForward(input, N, dropoutRng);
  std::vector<uint8_t> mask(N);
  for (int64_t j = 0; j < Ty; ++j)
    for (int64_t b = 0; b < B; ++b)
      mask[j * B + b] = j < batch.tgtLen[b];
  float *dLogits = backward ? logits.data() : nullptr;
  roundedDLogits.resize(
      backward && productPrecision() == cellrt::Precision::BF16 ? N * V : 0);
  double total = smoothedCrossEntropyInPlace(
      logits.data(), N, V, batch.tgtOut.data(), mask.data(), smoothing,
      1.f / float(batch.targetTokens), dLogits, outputBiasOf(output),
      roundedDLogits.empty() ? nullptr : roundedDLogits.data());
  if (!backward)
    return total;

  std::vector<float> dOutput(N * d), dInput;
  output.backwardWithoutBias(dropped.data(), N, dLogits, dOutput.data(),
                             /*accumulateDx=*/false,
                             roundedDLogits.empty() ? nullptr
                                                    : roundedDLogits.data());
  outputDropout.backward(dOutput.data(), N * d, dropMask);
  dMemory.assign(batch.Tx * B * d, 0.f);
  for (size_t l = decoder.size(); l-- > 0;) {
    dInput.assign(N * (l == 0 ? config.emb : d), 0.f);
    decoder[l]->backward(keys[l], decoderTraces[l], dOutput.data(),
                         dInput.data(), dMemory.data());
    dOutput.swap(dInput);
  }
  targetEmbedding.backward(batch.tgtIn.data(), N, dOutput.data());
  encodeBackward(batch);
  return total;
}

std::vector<float> SrnmtModel::targetLogProbs(const Batch &batch) {
  loss(batch, false, nullptr);
  return targetLogProbsOf(logits.data(), batch, config.tgtVocab);
}

class SrnmtModel::StepDecoder : public IncrementalDecoder {
public:
  StepDecoder(SrnmtModel &model, int64_t B)
      : model(model), states(model.decoder.size()), stateRows(B) {}
  const float *step(const BeamSearch &search) override {
    model.decodeStep(search, states, stateRows);
    stateRows = search.activeCount();
    return model.logits.data();
  }

private:
  SrnmtModel &model;
  // Each unit's scan state per row; empty: zeros (the first step).
  std::vector<std::vector<float>> states;
  int64_t stateRows;
};

std::unique_ptr<IncrementalDecoder>
SrnmtModel::startDecoding(const Batch &batch) {
  encode(batch, false);
  return std::make_unique<StepDecoder>(*this, batch.B);
}

void SrnmtModel::decodeStep(const BeamSearch &search,
                            std::vector<std::vector<float>> &states,
                            int64_t stateRows) {
  const int64_t n = search.activeCount(), d = config.hidden;
  std::vector<float> input(n * config.emb), out(n * d), next(n * d);
  targetEmbedding.forward(search.previousWords().data(), n, input.data());
  for (size_t l = 0; l < decoder.size(); ++l) {
    bool first = states[l].empty();
    decoder[l]->step(keys[l], input.data(), n, search.sentences().data(),
                     first ? nullptr : states[l].data(), stateRows,
                     first ? nullptr : search.parentRows().data(), next.data(),
                     out.data());
    states[l] = next;
    input.assign(out.begin(), out.end());
  }
  outputForward(input.data(), n, nullptr);
  logSoftmax(logits.data(), n, config.tgtVocab, outputBiasOf(output).value);
}

} // namespace nmt
