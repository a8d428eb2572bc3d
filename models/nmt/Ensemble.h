//===- models/nmt/Ensemble.h - Beam search over models ----------*- C++ -*-===//
//
// Beam search (beam 1 = greedy) of one model or of an ensemble: every
// model decodes the same hypotheses, and the search ranks the next word by
// the mean of the models' log-probabilities (Marian's ensembles with equal
// weights). One model, or N copies of one, search exactly as that model.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_ENSEMBLE_H
#define CELLC_MODELS_NMT_ENSEMBLE_H

#include "models/nmt/BeamSearch.h"
#include "models/nmt/TranslationModel.h"

#include <vector>

namespace nmt {

/// The finished search over a source batch by `models` (at least one, of
/// one target vocabulary size: DataError otherwise); read it with best()
/// or nBest(). The models' source vocabularies must be the same too.
BeamSearch searchBatch(const std::vector<TranslationModel *> &models,
                       const models::Batch &batch, int64_t beam,
                       int64_t maxLength, float lengthPenalty);

} // namespace nmt

#endif
