//===- models/nmt/Resume.cpp - Starting or resuming a run -----------------===//

#include "models/nmt/Resume.h"

#include <cstdio>

namespace nmt {

namespace {

/// A finished run goes on only when --epochs is given again.
bool continues(Session &session, const TrainRequest &request,
               const std::string &path) {
  if (session.state.finished && !request.given.count("epochs")) {
    std::fprintf(stderr, "nmt: %s has finished training\n", path.c_str());
    return false;
  }
  session.state.finished = false;
  return true;
}

} // namespace

RunRules runRules() {
  RunRules rules{"nmt", continues, loadTrainData};
  // --enc-layers 0 means the architecture's count, which the checkpoint
  // stores: compare that.
  rules.normalize = [](TrainOptions &options) {
    options.model.resolveLayers();
  };
  return rules;
}

std::unique_ptr<Session> prepareTraining(const TrainRequest &request,
                                         TrainData &data) {
  return models::prepareTraining(runRules(), request, data);
}

} // namespace nmt
