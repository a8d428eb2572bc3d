//===- models/nmt/Resume.cpp - Starting or resuming a run -----------------===//

#include "models/nmt/Resume.h"

#include <cstdio>

namespace nmt {

namespace {

/// Why the options `o` end a run at `state`, or "" where they let it go
/// on: its epochs done, its updates done, or --patience epochs without
/// progress.
std::string endedBy(const TrainState &state, const TrainOptions &o) {
  if (o.patience > 0 && state.badEpochs >= o.patience)
    return "stopped early: --patience " + std::to_string(o.patience) +
           " epochs without progress; a larger --patience goes on";
  if (state.epoch >= o.epochs)
    return "--epochs " + std::to_string(o.epochs) +
           " done; a larger --epochs goes on";
  if (o.maxUpdates > 0 && state.updates >= o.maxUpdates)
    return "--max-updates " + std::to_string(o.maxUpdates) +
           " done; a larger --max-updates goes on";
  return "";
}

/// A finished run goes on only where the options now given no longer end
/// it: running a recipe again leaves its finished runs as they ended.
bool continues(Session &session, const TrainRequest &request,
               const std::string &path) {
  if (!session.state.finished)
    return true;
  std::string reason = endedBy(session.state, session.options);
  if (!reason.empty()) {
    std::fprintf(stderr, "nmt: %s has finished training (%s)\n", path.c_str(),
                 reason.c_str());
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
