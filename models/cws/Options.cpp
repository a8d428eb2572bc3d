//===- models/cws/Options.cpp - cws train's options -----------------------===//

#include "models/cws/Options.h"

#include "models/common/Data.h"

namespace cws {

ModelConfig TrainOptions::modelConfig(int64_t vocab, bool lexicon) const {
  ModelConfig config;
  config.cell = cell;
  config.vocab = vocab;
  config.features = lexicon ? Lexicon::Width : 0;
  config.emb = emb;
  config.hidden = hidden;
  config.layers = layers;
  if (betweenLayers != "tanh" && betweenLayers != "raw")
    throw models::DataError("--between-layers must be tanh or raw, not '" +
                            betweenLayers + "'");
  config.squashBetweenLayers = betweenLayers == "tanh";
  config.dropout = dropout;
  config.hammingCost = margin;
  if (loss == "nll")
    config.loss = models::CrfLoss::NegativeLogLikelihood;
  else if (loss != "max-margin")
    throw models::DataError("--loss: unknown loss '" + loss +
                            "' (max-margin or nll)");
  return config;
}

} // namespace cws
