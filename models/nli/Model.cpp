//===- models/nli/Model.cpp - Natural language inference models -----------===//

#include "models/nli/Model.h"

#include "models/common/Init.h"

#include "models/common/Data.h"
#include "models/common/Losses.h"

#include <algorithm>
#include <cmath>

namespace nli {
using namespace models;

namespace {
constexpr int64_t kClasses = 3;
} // namespace

Batch makeBatch(const std::vector<Example> &examples,
                const std::vector<int64_t> &indices) {
  Batch batch;
  batch.B = int64_t(indices.size());
  for (int64_t i : indices) {
    batch.L = std::max<int64_t>(batch.L, examples[i].premise.size());
    batch.N = std::max<int64_t>(batch.N, examples[i].hypothesis.size());
  }
  batch.premise.assign(batch.L * batch.B, Vocab::Pad);
  batch.hypothesis.assign(batch.N * batch.B, Vocab::Pad);
  for (int64_t b = 0; b < batch.B; ++b) {
    const Example &example = examples[indices[b]];
    for (size_t t = 0; t < example.premise.size(); ++t)
      batch.premise[t * batch.B + b] = example.premise[t];
    for (size_t t = 0; t < example.hypothesis.size(); ++t)
      batch.hypothesis[t * batch.B + b] = example.hypothesis[t];
    batch.premiseLengths.push_back(int32_t(example.premise.size()));
    batch.hypothesisLengths.push_back(int32_t(example.hypothesis.size()));
    batch.labels.push_back(example.label);
  }
  return batch;
}

Model::Model(const ModelConfig &config, const cellrt::Cell *cell)
    : config(config), dropout(config.dropout) {
  words = std::make_unique<Embedding>(store, "embedding", config.vocab,
                                      config.emb);
  if (config.kind == "bow") {
    hiddenLayer = std::make_unique<Linear>(store, "hidden", 4 * config.emb,
                                           config.hidden);
    classifier =
        std::make_unique<Linear>(store, "classifier", config.hidden, kClasses);
    return;
  }
  if (config.kind != "attention")
    throw DataError("unknown model '" + config.kind +
                    "' (attention or bow)");
  if (!cell)
    throw DataError("the attention model needs a cell");
  premiseEncoder = std::make_unique<CellLayer>(*cell, "premise", config.emb,
                                               config.hidden, store);
  hypothesisEncoder = std::make_unique<CellLayer>(
      *cell, "hypothesis", config.emb, config.hidden, store);
  int64_t k = premiseEncoder->outputWidth();
  attention = std::make_unique<WordByWordAttention>(store, "attention", k);
  classifier = std::make_unique<Linear>(store, "classifier", k, kClasses);
}

void Model::initialize(uint64_t seed, const cellrt::InitScheme &fallback) {
  initializeParams(store.all(), seed, fallback);
}

int64_t Model::recurrentParameterCount() const {
  int64_t count = 0;
  for (const char *prefix : {"premise.", "hypothesis.", "attention."})
    for (Param *param : const_cast<ParamStore &>(store).all())
      if (param->name.rfind(prefix, 0) == 0)
        count += param->size();
  return count;
}

double Model::loss(const Batch &batch, bool train, Rng *dropoutRng,
                   std::vector<int32_t> *predictions) {
  const int64_t B = batch.B;
  if (attention)
    attentionForward(batch, train, dropoutRng);
  else
    bowForward(batch, dropoutRng);
  const int64_t F = classifier->inputWidth();
  dropout.forward(features.data(), B * F, dropoutRng, maskFeatures);
  logits.resize(B * kClasses);
  classifier->forward(features.data(), B, logits.data());
  if (predictions)
    *predictions = argmaxRows(logits.data(), B, kClasses);
  if (std::count(batch.labels.begin(), batch.labels.end(), -1))
    return 0; // unlabelled: predictions only
  std::vector<float> dLogits(B * kClasses), logProbs;
  double total = softmaxCrossEntropy(
      logits.data(), B, kClasses, batch.labels.data(), nullptr,
      1.f / float(B), train ? dLogits.data() : nullptr, logProbs);
  if (!train)
    return total;
  std::vector<float> dFeatures(B * F, 0.f);
  classifier->backward(features.data(), B, dLogits.data(), dFeatures.data());
  dropout.backward(dFeatures.data(), B * F, maskFeatures);
  if (attention)
    attentionBackward(batch, dFeatures.data());
  else
    bowBackward(batch, dFeatures.data());
  return total;
}

void Model::embed(const Batch &batch, Rng *rng) {
  const int64_t B = batch.B, L = batch.L, N = batch.N, E = config.emb;
  premiseEmb.resize(L * B * E);
  hypothesisEmb.resize(N * B * E);
  words->forward(batch.premise.data(), L * B, premiseEmb.data());
  words->forward(batch.hypothesis.data(), N * B, hypothesisEmb.data());
  dropout.forward(premiseEmb.data(), L * B * E, rng, maskPremise);
  dropout.forward(hypothesisEmb.data(), N * B * E, rng, maskHypothesis);
}

void Model::embedBackward(const Batch &batch, std::vector<float> &dPremiseEmb,
                          std::vector<float> &dHypothesisEmb) {
  const int64_t B = batch.B, L = batch.L, N = batch.N, E = config.emb;
  dropout.backward(dPremiseEmb.data(), L * B * E, maskPremise);
  dropout.backward(dHypothesisEmb.data(), N * B * E, maskHypothesis);
  words->backward(batch.premise.data(), L * B, dPremiseEmb.data());
  words->backward(batch.hypothesis.data(), N * B, dHypothesisEmb.data());
}

void Model::attentionForward(const Batch &batch, bool train, Rng *rng) {
  const int64_t B = batch.B, L = batch.L, N = batch.N, E = config.emb;
  const int64_t k = attention->width();
  embed(batch, rng);
  Y.resize(L * B * k);
  H.resize(N * B * k);
  premiseEncoder->forward({{premiseEmb.data()},
                           batch.premiseLengths.data(), L, B, {}, Y.data()},
                          premiseTrace, train);
  // Conditional encoding: the hypothesis starts where the premise ended.
  hypothesisEncoder->forward({{hypothesisEmb.data()},
                              batch.hypothesisLengths.data(), N, B,
                              premiseTrace.finalStatePointers(), H.data()},
                             hypothesisTrace, train);
  attendedY = Y;
  attendedH = H;
  if (config.squashStates) { // tanh(0) = 0 at padded steps
    tanhInPlace(attendedY.data(), L * B * k);
    tanhInPlace(attendedH.data(), N * B * k);
  }
  features.resize(B * k);
  attention->forward(attendedY.data(), batch.premiseLengths.data(), L,
                     attendedH.data(), batch.hypothesisLengths.data(), N, B,
                     cache, features.data());
}

void Model::attentionBackward(const Batch &batch, const float *dFeatures) {
  const int64_t B = batch.B, L = batch.L, N = batch.N, E = config.emb;
  const int64_t k = attention->width();
  std::vector<float> dY(L * B * k, 0.f), dH(N * B * k, 0.f);
  attention->backward(cache, dFeatures, dY.data(), dH.data());
  if (config.squashStates) {
    tanhBackward(attendedY.data(), dY.data(), L * B * k);
    tanhBackward(attendedH.data(), dH.data(), N * B * k);
  }
  // The hypothesis encoder's initial-state gradient is the premise
  // encoder's final-state gradient.
  const std::vector<int64_t> &widths = premiseEncoder->stateWidths();
  std::vector<std::vector<float>> dStates(widths.size());
  std::vector<float *> dInitial;
  std::vector<const float *> dFinal;
  for (size_t s = 0; s < widths.size(); ++s) {
    dStates[s].assign(B * widths[s], 0.f);
    dInitial.push_back(dStates[s].data());
    dFinal.push_back(dStates[s].data());
  }
  std::vector<float> dHypothesisEmb(N * B * E, 0.f), dPremiseEmb(L * B * E, 0.f);
  hypothesisEncoder->backward(hypothesisTrace, dH.data(),
                              {dHypothesisEmb.data()}, {}, dInitial);
  premiseEncoder->backward(premiseTrace, dY.data(), {dPremiseEmb.data()},
                           dFinal);
  embedBackward(batch, dPremiseEmb, dHypothesisEmb);
}

namespace {
/// The mean of each sequence's rows of time-major emb [T, B, E].
void meanOverTime(const float *emb, const std::vector<int32_t> &lengths,
                  int64_t B, int64_t E, float *mean, int64_t stride) {
  for (int64_t b = 0; b < B; ++b) {
    float *out = mean + b * stride;
    std::fill(out, out + E, 0.f);
    for (int32_t t = 0; t < lengths[b]; ++t)
      for (int64_t j = 0; j < E; ++j)
        out[j] += emb[(t * B + b) * E + j] / float(lengths[b]);
  }
}

/// Backward of meanOverTime: dEmb[t, b] = dMean[b] / length.
void meanOverTimeBackward(const float *dMean, const std::vector<int32_t> &lengths,
                          int64_t B, int64_t E, float *dEmb) {
  for (int64_t b = 0; b < B; ++b)
    for (int32_t t = 0; t < lengths[b]; ++t)
      for (int64_t j = 0; j < E; ++j)
        dEmb[(t * B + b) * E + j] += dMean[b * E + j] / float(lengths[b]);
}
} // namespace

void Model::bowForward(const Batch &batch, Rng *rng) {
  const int64_t B = batch.B, L = batch.L, N = batch.N, E = config.emb;
  embed(batch, rng);
  // [u; v; |u - v|; u * v] per pair.
  bowInput.assign(B * 4 * E, 0.f);
  meanOverTime(premiseEmb.data(), batch.premiseLengths, B, E,
               bowInput.data(), 4 * E);
  meanOverTime(hypothesisEmb.data(), batch.hypothesisLengths, B, E,
               bowInput.data() + E, 4 * E);
  for (int64_t b = 0; b < B; ++b) {
    float *row = bowInput.data() + b * 4 * E;
    for (int64_t j = 0; j < E; ++j) {
      row[2 * E + j] = std::fabs(row[j] - row[E + j]);
      row[3 * E + j] = row[j] * row[E + j];
    }
  }
  const int64_t hidden = hiddenLayer->outputWidth();
  bowHidden.resize(B * hidden);
  hiddenLayer->forward(bowInput.data(), B, bowHidden.data());
  tanhInPlace(bowHidden.data(), B * hidden);
  features = bowHidden;
}

void Model::bowBackward(const Batch &batch, const float *dFeatures) {
  const int64_t B = batch.B, L = batch.L, N = batch.N, E = config.emb;
  const int64_t hidden = hiddenLayer->outputWidth();
  std::vector<float> dPre(B * hidden), dInput(B * 4 * E, 0.f);
  for (int64_t i = 0; i < B * hidden; ++i)
    dPre[i] = dFeatures[i] * (1.f - bowHidden[i] * bowHidden[i]);
  hiddenLayer->backward(bowInput.data(), B, dPre.data(), dInput.data());
  std::vector<float> du(B * E), dv(B * E);
  for (int64_t b = 0; b < B; ++b) {
    const float *row = bowInput.data() + b * 4 * E;
    const float *d = dInput.data() + b * 4 * E;
    for (int64_t j = 0; j < E; ++j) {
      float u = row[j], v = row[E + j];
      float sign = u > v ? 1.f : (u < v ? -1.f : 0.f);
      du[b * E + j] = d[j] + sign * d[2 * E + j] + v * d[3 * E + j];
      dv[b * E + j] = d[E + j] - sign * d[2 * E + j] + u * d[3 * E + j];
    }
  }
  std::vector<float> dPremiseEmb(L * B * E, 0.f), dHypothesisEmb(N * B * E, 0.f);
  meanOverTimeBackward(du.data(), batch.premiseLengths, B, E,
                       dPremiseEmb.data());
  meanOverTimeBackward(dv.data(), batch.hypothesisLengths, B, E,
                       dHypothesisEmb.data());
  embedBackward(batch, dPremiseEmb, dHypothesisEmb);
}

} // namespace nli
