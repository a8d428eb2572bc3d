//===- models/cws/Resume.cpp - Starting or resuming a run -----------------===//
//
// As nmt does it (models/common/RunFiles.h): --resume continues OUT (or
// OUT.best) with the checkpoint's options, refusing a command line that
// contradicts them; a run never writes over another run's checkpoint.
//
//===----------------------------------------------------------------------===//

#include "models/common/RunFiles.h"
#include "models/cws/Session.h"

#include <cstdio>

namespace cws {

namespace {

/// The checkpoint at `path` with the command line's changeable options;
/// null when it has finished and nothing extends it.
std::unique_ptr<Session> resumeSession(const std::string &path,
                                       const TrainRequest &request) {
  auto session = Session::load(path);
  models::checkSameSetup(path, session->options.toMap(),
                         request.options.toMap(), request.given,
                         optionsChangeableOnResume());
  session->options = TrainOptions::fromMap(models::resumedOptions(
      session->options.toMap(), request.options.toMap(), request.given,
      optionsChangeableOnResume(), optionsOfTheCommandLine()));
  if (session->state.epoch >= session->options.epochs) {
    std::fprintf(stderr, "cws: %s has finished training (--epochs %lld)\n",
                 path.c_str(), (long long)session->options.epochs);
    return nullptr;
  }
  std::fprintf(stderr, "resuming %s at epoch %lld, update %lld; writing %s\n",
               path.c_str(), (long long)session->state.epoch + 1,
               (long long)session->state.updates,
               session->options.out.c_str());
  return session;
}

} // namespace

std::unique_ptr<Session> prepareTraining(const TrainRequest &request,
                                         TrainData &data) {
  const std::string &out = request.options.out;
  models::removeStaleTemporaries("cws", out);
  std::unique_ptr<Session> session;
  if (request.resume) {
    std::string source = models::resumeSource("cws", out, "");
    if (!source.empty()) {
      session = resumeSession(source, request);
      if (!session)
        return nullptr;
    }
  }
  data = loadTrainData(session ? session->options : request.options);
  if (!session)
    session = std::make_unique<Session>(request.options, data);
  for (const std::string &path : {out, out + ".best"})
    models::checkOutputOwnership("cws", path, session->runId, request.force);
  return session;
}

} // namespace cws
