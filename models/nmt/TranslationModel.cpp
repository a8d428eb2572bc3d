//===- models/nmt/TranslationModel.cpp - The architectures ---------------===//

#include "models/nmt/Model.h"
#include "models/nmt/Srnmt.h"

namespace nmt {

models::LogitBias outputBiasOf(const models::Linear &output) {
  models::Param *b = output.bias();
  if (!b)
    return {};
  return {b->value.data(), b->frozen ? nullptr : b->grad.data()};
}

std::vector<float> targetLogProbsOf(const float *logProbs,
                                    const models::Batch &batch, int64_t vocab) {
  const int64_t N = batch.Ty * batch.B;
  std::vector<float> result(N);
  for (int64_t r = 0; r < N; ++r)
    result[r] = logProbs[r * vocab + batch.tgtOut[r]];
  return result;
}

std::unique_ptr<TranslationModel> makeModel(const ModelConfig &config,
                                            const cellrt::Cell &cell,
                                            const cellrt::Cell *twoSourceCell) {
  if (config.arch != "srnmt") {
    if (config.noLayerNorm || config.noHighway || config.singleAttention)
      throw models::DataError("--no-layernorm, --no-highway and "
                              "--single-attention are SR-NMT's ablations "
                              "(--arch srnmt)");
    return std::make_unique<Model>(config, cell, twoSourceCell);
  }
  if (twoSourceCell || config.shareCell)
    throw models::DataError(
        std::string(twoSourceCell ? "--cell2" : "--share-cell") +
        ": --arch srnmt runs its own units");
  ModelConfig resolved = config;
  resolved.resolveLayers();
  return std::make_unique<SrnmtModel>(resolved);
}

} // namespace nmt
