//===- models/nmt/Resume.h - Starting or resuming a run ---------*- C++ -*-===//
//
// What `nmt train` does before the first update: resume the checkpoint (or
// its .best when a kill during the first save left only that), refuse a
// command line that contradicts the checkpoint's setup, write only where
// --out says, never over another run's checkpoint, and clear the partial
// temporaries a kill leaves.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_RESUME_H
#define CELLC_MODELS_NMT_RESUME_H

#include "models/common/RunStart.h"
#include "models/nmt/Trainer.h"

#include <memory>
#include <string>

namespace nmt {
// The driver is built from the layer library in models/common.
using namespace models;

/// `nmt train` as the command line asked for it.
using TrainRequest = models::RunRequest<TrainOptions>;

/// How nmt runs start and resume (models/common/RunStart.h): a finished
/// run goes on only when --epochs is given again.
using RunRules = models::RunRules<Session, TrainOptions, TrainData>;
RunRules runRules();

/// The session to train and its data, or null (with a message) when the
/// resumed run has already finished (models::prepareTraining with nmt's
/// rules). Throws DataError naming the file or the contradicting options.
std::unique_ptr<Session> prepareTraining(const TrainRequest &request,
                                         TrainData &data);

} // namespace nmt

#endif
