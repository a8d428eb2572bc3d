//===- models/cws/Resume.cpp - Starting or resuming a run -----------------===//
//
// As every driver does it (models/common/RunStart.h): --resume continues
// OUT (or OUT.best) with the checkpoint's options, refusing a command line
// that contradicts them; a run never writes over another run's checkpoint.
//
//===----------------------------------------------------------------------===//

#include "models/common/RunStart.h"
#include "models/cws/Session.h"

#include <cstdio>

namespace cws {

namespace {

/// A run has finished at its --epochs; a larger --epochs extends it.
bool continues(Session &session, const TrainRequest &request,
               const std::string &path) {
  if (session.state.epoch < session.options.epochs)
    return true;
  std::fprintf(stderr, "cws: %s has finished training (--epochs %lld)\n",
               path.c_str(), (long long)session.options.epochs);
  return false;
}

} // namespace

std::unique_ptr<Session> prepareTraining(const TrainRequest &request,
                                         TrainData &data) {
  models::RunRules<Session, TrainOptions, TrainData> rules{
      "cws", optionsChangeableOnResume(), optionsOfTheCommandLine(),
      continues, loadTrainData, {"train", "valid", "dict"}};
  return models::prepareTraining(rules, request, data);
}

} // namespace cws
