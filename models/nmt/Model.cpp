//===- models/nmt/Model.cpp - RNNSearch over compiled cells --------------===//
//
// The layers, the encoder and the readout (shared by training and
// decoding), and the training loss. The teacher-forced decoder is in
// Decoder.cpp, beam search in Translate.cpp.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/Model.h"

#include "models/common/Init.h"

#include "models/common/Losses.h"
#include "models/common/Math.h"
#include "models/common/Pooling.h"

namespace nmt {

void ModelConfig::resolveLayers() {
  int64_t usual = isDeepArchitecture(arch) ? 2 : 1;
  if (encLayers == 0)
    encLayers = usual;
  if (decLayers == 0)
    decLayers = usual;
}

namespace {

ModelConfig withLayers(ModelConfig config) {
  config.resolveLayers();
  return config;
}

/// Decoder cell 1: its own, or (SGRU) the encoder cell's params.
CellLayer makeDecoder1(const ModelConfig &config, const cellrt::Cell &cell,
                       const SourceEncoder &encoder, ParamStore &store) {
  if (!config.shareCell)
    return CellLayer(cell, "decoder1", config.emb, config.hidden, store);
  if (!encoder.sharedLayer())
    throw DataError("--share-cell: only --arch cseq2seq-2 has an encoder "
                    "cell to share");
  return CellLayer::sharing(*encoder.sharedLayer(), /*reverse=*/false);
}

/// The output layer: its own weight, or (SWord) the target embeddings.
Linear makeOutput(const ModelConfig &config, Embedding &targetEmbedding,
                  ParamStore &store) {
  if (!config.tieOutput)
    return Linear(store, "output", config.readout, config.tgtVocab);
  if (config.readout != config.emb)
    throw DataError("--tie-output: the output layer reads --readout (" +
                    std::to_string(config.readout) +
                    ") values; the target embeddings have --emb (" +
                    std::to_string(config.emb) + ")");
  return Linear(store, "output", targetEmbedding.weights());
}

} // namespace

Model::Model(const ModelConfig &config, const cellrt::Cell &cell,
             const cellrt::Cell *twoSourceCell)
    : config(withLayers(config)), twoSourceCell(twoSourceCell),
      sourceEmbedding(store, "src_embedding", config.srcVocab, config.emb),
      targetEmbedding(store, "tgt_embedding", config.tgtVocab, config.emb),
      encoder(this->config, cell, config.emb, config.hidden, store,
              twoSourceCell),
      decoder1(makeDecoder1(this->config, cell, encoder, store)),
      decoder2(cell, "decoder2",
               isCyclicArchitecture(config.arch) ? config.hidden
                                                 : encoder.outputWidth(),
               config.hidden, store),
      init(store, "init", encoder.outputWidth(), decoder1.stateWidths()[0]),
      attention(isCyclicArchitecture(config.arch)
                    ? nullptr
                    : std::make_unique<AdditiveAttention>(
                          store, "attention", decoder1.outputWidth(),
                          encoder.outputWidth(), config.att)),
      readout(store, "readout",
              {{"Ws", decoder2.outputWidth()},
               {"Wy", config.emb},
               {"Wc", decoder2.inputWidth()}},
              config.readout),
      output(makeOutput(this->config, targetEmbedding, store)),
      readoutDropout(config.dropout) {
  // Cell 2 continues from cell 1's states.
  if (decoder1.stateWidths() != decoder2.stateWidths())
    throw DataError("decoder cells have different state widths");
  if (twoSourceCell && config.arch != "ca" && config.arch != "gnmt")
    throw DataError("--cell2: only --arch ca and gnmt have layers with two "
                    "sources");
  addUpperLayers(cell);
  if (encoder.sharedLayer())
    cyclic = std::make_unique<CyclicContext>(
        CellLayer::sharing(*encoder.sharedLayer(), /*reverse=*/false), "cyclic",
        decoder1.outputWidth(), cyclicPool(config.context), store);
  else if (!attention)
    cyclic = std::make_unique<CyclicContext>(
        cell, "cyclic", decoder1.outputWidth(), encoder.outputWidth(),
        config.hidden, cyclicPool(config.context), store);
  if (cyclic && config.betweenLayers == "tanh")
    cyclic->squashContext();
}

void Model::initialize(uint64_t seed, const cellrt::InitScheme &fallback) {
  initializeParams(store.all(), seed, fallback);
}

void Model::recordProbes(ModelProbes *probes) {
  for (int64_t direction : {0, 1})
    if (CellLayer *layer = encoder.layer(direction))
      layer->setProbeRecorder(!probes          ? nullptr
                              : direction == 0 ? &probes->encoderForward
                                               : &probes->encoderBackward);
  decoder1.setProbeRecorder(probes ? &probes->decoder1 : nullptr);
  decoder2.setProbeRecorder(probes ? &probes->decoder2 : nullptr);
}

bool Model::recordAttention(std::vector<float> *alpha) {
  attentionRecord = attention ? alpha : nullptr;
  return attention != nullptr;
}

std::vector<Param *> Model::params() { return store.all(); }

int64_t Model::parameterCount() { return store.count(); }

void Model::encode(const Batch &batch, bool train) {
  const int64_t B = batch.B, Tx = batch.Tx, C = encoder.outputWidth();
  sourceEmbedded.resize(Tx * B * config.emb);
  sourceEmbedding.forward(batch.src.data(), Tx * B, sourceEmbedded.data());
  annotations.resize(Tx * B * C);
  encoder.forward(sourceEmbedded.data(), batch.srcLen.data(), Tx, B,
                  annotations.data(), train);
  tanhInPlace(annotations.data(), Tx * B * C);
  summary.resize(B * C);
  if (encoder.sharedLayer()) // the backward run's state at position 0
    std::copy_n(annotations.data(), B * C, summary.data());
  else
    meanOverTime(annotations.data(), batch.srcLen.data(), B, C, summary.data());
  s0.resize(B * init.outputWidth());
  init.forward(summary.data(), B, s0.data());
  tanhInPlace(s0.data(), int64_t(s0.size()));
  if (attention)
    attention->precompute(annotations.data(), batch.srcLen.data(), Tx, B, keys);
  else // Cseq2seq-II re-reads the source embeddings, -I the annotations
    cyclic->precompute(encoder.sharedLayer() ? sourceEmbedded.data()
                                             : annotations.data(),
                       batch.srcLen.data(), Tx, B, cyclicSource);
}

void Model::encodeBackward(const Batch &batch, const float *dInitialState) {
  const int64_t B = batch.B, Tx = batch.Tx, C = encoder.outputWidth();
  if (cyclic) // every target step's pass over the source, at once
    cyclic->sequenceBackward(cyclicSource, encoder.sharedLayer()
                                               ? dSourceEmbedded.data()
                                               : dAnnotations.data());
  std::vector<float> dPre(dInitialState, dInitialState + s0.size());
  tanhBackward(s0.data(), dPre.data(), int64_t(dPre.size()));
  std::vector<float> dSummary(B * C);
  init.backward(summary.data(), B, dPre.data(), dSummary.data(),
                /*accumulateDx=*/false);
  if (encoder.sharedLayer())
    for (int64_t i = 0; i < B * C; ++i)
      dAnnotations[i] += dSummary[i];
  else
    meanOverTimeBackward(dSummary.data(), batch.srcLen.data(), B, C,
                         dAnnotations.data());
  if (attention)
    attention->keysBackward(keys, dAnnotations.data());
  tanhBackward(annotations.data(), dAnnotations.data(), Tx * B * C);
  // dSourceEmbedded holds what the cyclic context (Cseq2seq-II) added.
  encoder.backward(dAnnotations.data(), dSourceEmbedded.data());
  sourceEmbedding.backward(batch.src.data(), Tx * B, dSourceEmbedded.data());
}

void Model::readoutForward(const float *s, const float *y, const float *c,
                           int64_t rows, Rng *dropoutRng, Readout &out) const {
  const int64_t S = topWidth(), R = readout.outputWidth();
  out.tanhState.assign(s, s + rows * S);
  tanhInPlace(out.tanhState.data(), rows * S);
  out.hidden.resize(rows * R);
  readout.forward({out.tanhState.data(), y, c}, rows, out.hidden.data());
  tanhInPlace(out.hidden.data(), rows * R);
  out.dropped = out.hidden;
  readoutDropout.forward(out.dropped.data(), rows * R, dropoutRng,
                         out.dropMask);
  out.logits.resize(rows * output.outputWidth());
  // The output bias is added by the loss or log-softmax reading the logits.
  output.forwardWithoutBias(out.dropped.data(), rows, out.logits.data());
}

void Model::readoutBackward(const float *s, const float *y, const float *c,
                            int64_t rows, Readout &out, const float *dLogits,
                            const uint16_t *roundedDLogits, float *ds,
                            float *dy, float *dc) const {
  const int64_t R = readout.outputWidth();
  std::vector<float> dHidden(rows * R);
  output.backwardWithoutBias(out.dropped.data(), rows, dLogits, dHidden.data(),
                             /*accumulateDx=*/false, roundedDLogits);
  readoutDropout.backward(dHidden.data(), rows * R, out.dropMask);
  tanhBackward(out.hidden.data(), dHidden.data(), rows * R);
  readout.backward({out.tanhState.data(), y, c}, rows, dHidden.data(),
                   {ds, dy, dc}, /*accumulateDx=*/false);
  tanhBackward(out.tanhState.data(), ds, rows * topWidth());
}

double Model::loss(const Batch &batch, bool backward, Rng *dropoutRng) {
  const int64_t B = batch.B, Ty = batch.Ty, N = Ty * B;
  const int64_t V = config.tgtVocab;
  encode(batch, backward);
  decodeForward(batch, backward);
  const float *top = upperForward(batch, backward);
  readoutForward(top, targetEmbedded.data(), contexts.data(), N, dropoutRng,
                 trainReadout);
  std::vector<uint8_t> mask(N);
  for (int64_t j = 0; j < Ty; ++j)
    for (int64_t b = 0; b < B; ++b)
      mask[j * B + b] = j < batch.tgtLen[b];
  float *dLogits = backward ? trainReadout.logits.data() : nullptr;
  roundedDLogits.resize(
      backward && productPrecision() == cellrt::Precision::BF16 ? N * V : 0);
  double total = smoothedCrossEntropyInPlace(
      trainReadout.logits.data(), N, V, batch.tgtOut.data(), mask.data(),
      smoothing, 1.f / float(batch.targetTokens), dLogits, outputBiasOf(output),
      roundedDLogits.empty() ? nullptr : roundedDLogits.data());
  if (!backward)
    return total;

  std::vector<float> dTop(N * topWidth()), dOut2(out2.size()),
      dEmbedded(targetEmbedded.size()), dContexts(contexts.size());
  readoutBackward(top, targetEmbedded.data(), contexts.data(), N, trainReadout,
                  dLogits,
                  roundedDLogits.empty() ? nullptr : roundedDLogits.data(),
                  dTop.data(), dEmbedded.data(), dContexts.data());
  upperBackward(batch, dTop.data(), dOut2.data(), dContexts.data());
  dAnnotations.assign(annotations.size(), 0.f);
  dSourceEmbedded.assign(sourceEmbedded.size(), 0.f);
  States dInitial =
      decodeBackward(batch, dOut2.data(), dEmbedded.data(), dContexts.data());
  targetEmbedding.backward(batch.tgtIn.data(), N, dEmbedded.data());
  // Only s_0's first state comes from the encoder.
  encodeBackward(batch, dInitial[0].data());
  return total;
}

std::vector<float> Model::targetLogProbs(const Batch &batch) {
  loss(batch, false, nullptr);
  return targetLogProbsOf(trainReadout.logits.data(), batch, config.tgtVocab);
}

} // namespace nmt
