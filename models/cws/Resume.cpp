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

/// A run has finished at its --epochs (or --patience); a larger --epochs
/// extends it.
bool continues(Session &session, const TrainRequest &request,
               const std::string &path) {
  bool stoppedEarly = session.state.finished &&
                      session.state.epoch < session.options.epochs;
  if (stoppedEarly && !request.given.count("epochs") &&
      !request.given.count("patience")) {
    std::fprintf(stderr, "cws: %s has finished training (--patience %lld)\n",
                 path.c_str(), (long long)session.options.patience);
    return false;
  }
  session.state.finished = false;
  if (session.state.epoch < session.options.epochs)
    return true;
  std::fprintf(stderr, "cws: %s has finished training (--epochs %lld)\n",
               path.c_str(), (long long)session.options.epochs);
  return false;
}

} // namespace

RunRules runRules() { return {"cws", continues, loadTrainData}; }

std::unique_ptr<Session> prepareTraining(const TrainRequest &request,
                                         TrainData &data) {
  return models::prepareTraining(runRules(), request, data);
}

} // namespace cws
