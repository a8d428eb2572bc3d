//===- models/nmt/Ensemble.cpp - Beam search over models ------------------===//

#include "models/nmt/Ensemble.h"

#include <memory>
#include <string>

namespace nmt {

namespace {

/// The mean of the decoders' next-word log-probabilities; one decoder's
/// own rows as they are. Each model encodes and steps in the precision it
/// was built in: the process's setting is the last loaded model's, which
/// in an ensemble of f32 and bf16 models is not every model's.
class MeanDecoder {
public:
  MeanDecoder(const std::vector<TranslationModel *> &models,
              const models::Batch &batch) {
    for (TranslationModel *model : models) {
      models::ThreadProductPrecision own(model->precision());
      decoders.push_back(model->startDecoding(batch));
      precisions.push_back(model->precision());
    }
  }

  const float *step(const BeamSearch &search, int64_t vocab) {
    const float *first = stepOf(0, search);
    if (decoders.size() == 1)
      return first;
    const int64_t n = search.activeCount() * vocab;
    mean.assign(first, first + n);
    for (size_t m = 1; m < decoders.size(); ++m) {
      const float *logProbs = stepOf(m, search);
      for (int64_t i = 0; i < n; ++i)
        mean[i] += logProbs[i];
    }
    const float count = float(decoders.size());
    for (float &value : mean)
      value /= count;
    return mean.data();
  }

private:
  const float *stepOf(size_t m, const BeamSearch &search) {
    models::ThreadProductPrecision own(precisions[m]);
    return decoders[m]->step(search);
  }

  std::vector<std::unique_ptr<IncrementalDecoder>> decoders;
  std::vector<cellrt::Precision> precisions;
  std::vector<float> mean;
};

} // namespace

BeamSearch searchBatch(const std::vector<TranslationModel *> &models,
                       const models::Batch &batch, int64_t beam,
                       int64_t maxLength, float lengthPenalty) {
  if (models.empty())
    throw models::DataError("decoding needs a model");
  const int64_t vocab = models[0]->targetVocabulary();
  for (TranslationModel *model : models)
    if (model->targetVocabulary() != vocab)
      throw models::DataError(
          "an ensemble's models must have one target vocabulary (" +
          std::to_string(vocab) + " and " +
          std::to_string(model->targetVocabulary()) + " words)");
  BeamSearch search(batch, beam, maxLength, lengthPenalty);
  MeanDecoder decoder(models, batch);
  while (search.nextStep())
    search.advance(decoder.step(search, vocab), vocab);
  return search;
}

std::vector<std::vector<int32_t>>
TranslationModel::translate(const models::Batch &batch, int64_t beam,
                            int64_t maxLength, float lengthPenalty,
                            std::vector<double> *scores) {
  return searchBatch({this}, batch, beam, maxLength, lengthPenalty)
      .best(scores);
}

} // namespace nmt
