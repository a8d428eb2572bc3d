//===- models/cws/Model.cpp - Character BiRNN + CRF tagger ----------------===//

#include "models/cws/Model.h"

#include "models/common/Init.h"

#include <algorithm>
#include <stdexcept>

namespace cws {

using namespace models;

namespace {

/// out[r] = [a[r] ; b[r]] for rows of widths wa and wb.
void concatRows(const float *a, int64_t wa, const float *b, int64_t wb,
                int64_t rows, float *out) {
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(a + r * wa, wa, out + r * (wa + wb));
    std::copy_n(b + r * wb, wb, out + r * (wa + wb) + wa);
  }
}

} // namespace

Model::Model(const ModelConfig &config, const cellrt::Cell &cell)
    : config(config), embedding(store, "embedding", config.vocab, config.emb),
      encoder(cell, "encoder",
              EncoderShape{config.emb + config.features, config.hidden,
                           config.layers, true, {}, -1,
                           config.squashBetweenLayers},
              store),
      emission(store, "emission", encoder.outputWidth(), NumTags),
      crf(store, "crf", NumTags), dropout(config.dropout) {}

void Model::initialize(uint64_t seed, const cellrt::InitScheme &fallback) {
  models::initializeParams(store.all(), seed, fallback);
}

int64_t Model::recurrentParameterCount() {
  int64_t count = 0;
  for (const Param *p : store.all())
    if (p->name.rfind("encoder.", 0) == 0)
      count += p->size();
  return count;
}

void Model::forward(const CharBatch &batch, bool train, Rng *dropoutRng) {
  int64_t rows = batch.T * batch.B;
  embedded.resize(rows * config.emb);
  embedding.forward(batch.ids.data(), rows, embedded.data());
  dropout.forward(embedded.data(), int64_t(embedded.size()), dropoutRng,
                  embeddedMask);
  const float *input = embedded.data();
  if (config.features > 0) {
    if (batch.featureWidth != config.features)
      throw std::invalid_argument("the batch has no word-list features");
    inputs.resize(rows * (config.emb + config.features));
    concatRows(embedded.data(), config.emb, batch.features.data(),
               config.features, rows, inputs.data());
    input = inputs.data();
  }
  encoded.resize(rows * encoder.outputWidth());
  encoder.forward(input, batch.lengths.data(), batch.T, batch.B,
                  encoded.data(), trace, train);
  dropout.forward(encoded.data(), int64_t(encoded.size()), dropoutRng,
                  encodedMask);
  scores.resize(rows * NumTags);
  emission.forward(encoded.data(), rows, scores.data());
}

double Model::loss(const CharBatch &batch, bool backward, Rng *dropoutRng) {
  forward(batch, backward, dropoutRng);
  if (!backward)
    return crf.loss(scores.data(), batch.lengths.data(), batch.T, batch.B,
                    batch.tags.data(), config.loss, config.hammingCost,
                    nullptr);
  // The CRF accumulates the gradient of the summed loss: keep what its
  // parameters held, to scale only its part to the mean per sentence.
  std::vector<Param *> own = {&crf.transitions(), &crf.start(), &crf.end()};
  std::vector<std::vector<float>> before;
  for (Param *p : own)
    before.push_back(p->grad);
  dScores.assign(scores.size(), 0.f);
  double total = crf.loss(scores.data(), batch.lengths.data(), batch.T,
                          batch.B, batch.tags.data(), config.loss,
                          config.hammingCost, dScores.data());
  float scale = 1.f / float(batch.B);
  for (size_t k = 0; k < own.size(); ++k)
    for (size_t i = 0; i < own[k]->grad.size(); ++i)
      own[k]->grad[i] =
          before[k][i] + (own[k]->grad[i] - before[k][i]) * scale;
  for (float &d : dScores)
    d *= scale;
  backpropagate(batch);
  return total;
}

void Model::backpropagate(const CharBatch &batch) {
  int64_t rows = batch.T * batch.B, width = encoder.outputWidth();
  dEncoded.assign(encoded.size(), 0.f);
  emission.backward(encoded.data(), rows, dScores.data(), dEncoded.data());
  dropout.backward(dEncoded.data(), int64_t(dEncoded.size()), encodedMask);
  if (breakGradientForTest)
    for (int64_t r = 0; r < rows; ++r)
      std::fill_n(dEncoded.data() + r * width + width / 2, width / 2, 0.f);
  dEmbedded.assign(embedded.size(), 0.f);
  if (config.features == 0) {
    encoder.backward(trace, dEncoded.data(), dEmbedded.data());
  } else {
    // The features are data: only the embeddings' columns go on.
    int64_t inputWidth = config.emb + config.features;
    dInputs.assign(rows * inputWidth, 0.f);
    encoder.backward(trace, dEncoded.data(), dInputs.data());
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(dInputs.data() + r * inputWidth, config.emb,
                  dEmbedded.data() + r * config.emb);
  }
  dropout.backward(dEmbedded.data(), int64_t(dEmbedded.size()), embeddedMask);
  embedding.backward(batch.ids.data(), rows, dEmbedded.data());
}

std::vector<std::vector<int32_t>> Model::decode(const CharBatch &batch) {
  forward(batch, false, nullptr);
  return crf.decode(scores.data(), batch.lengths.data(), batch.T, batch.B);
}

} // namespace cws
