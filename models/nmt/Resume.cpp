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

const std::set<std::string> &optionsChangeableOnResume() {
  static const std::set<std::string> keys = {
      "epochs",     "max-updates", "patience",      "progress",
      "log",        "log-every",   "save-every",    "out",
      "valid-beam", "valid-max",   "skip-nonfinite", "valid-every"};
  return keys;
}

std::unique_ptr<Session> prepareTraining(const TrainRequest &request,
                                         TrainData &data) {
  RunRules<Session, TrainOptions, TrainData> rules{
      "nmt",
      optionsChangeableOnResume(),
      {"out", "log", "progress", "skip-nonfinite"},
      continues,
      loadTrainData,
      {"train-src", "train-tgt", "valid-src", "valid-tgt", "spm-src",
       "spm-tgt"}};
  // --enc-layers 0 means the architecture's count, which the checkpoint
  // stores: compare that.
  TrainRequest resolved = request;
  resolved.options.model.resolveLayers();
  return models::prepareTraining(rules, resolved, data);
}

} // namespace nmt
