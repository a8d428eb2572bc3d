//===- models/nmt/Resume.cpp - Starting or resuming a run -----------------===//

#include "models/nmt/Resume.h"

#include <cstdio>

namespace nmt {

namespace {

/// The checkpoint at `path` with the command line's run-length and
/// reporting options; null when it has finished and nothing extends it.
std::unique_ptr<Session> resumeSession(const std::string &path,
                                       const TrainRequest &request) {
  auto session = Session::load(path);
  checkSameSetup(path, session->options.toMap(), request.options.toMap(),
                 request.given, optionsChangeableOnResume());
  session->options = TrainOptions::fromMap(resumedOptions(
      session->options.toMap(), request.options.toMap(), request.given,
      optionsChangeableOnResume(),
      {"out", "log", "progress", "skip-nonfinite"}));
  if (!request.resumeFrom.empty() && request.resumeFrom != request.options.out)
    session->runId = newRunId(); // a branch of the run: a run of its own
  if (session->state.finished && !request.given.count("epochs")) {
    std::fprintf(stderr, "nmt: %s has finished training\n", path.c_str());
    return nullptr;
  }
  session->state.finished = false;
  std::fprintf(stderr, "resuming %s at epoch %lld, update %lld; writing %s\n",
               path.c_str(), (long long)session->state.epoch + 1,
               (long long)session->state.updates, session->options.out.c_str());
  return session;
}

} // namespace

const std::set<std::string> &optionsChangeableOnResume() {
  static const std::set<std::string> keys = {
      "epochs",     "max-updates", "patience",      "progress",
      "log",        "log-every",   "save-every",    "out",
      "valid-beam", "valid-max",   "skip-nonfinite"};
  return keys;
}

std::unique_ptr<Session> prepareTraining(const TrainRequest &request,
                                         TrainData &data) {
  const std::string &out = request.options.out;
  removeStaleTemporaries("nmt", out);
  std::unique_ptr<Session> session;
  bool resume = request.resume || !request.resumeFrom.empty();
  if (resume) {
    std::string source =
        resumeSource("nmt", request.options.out, request.resumeFrom);
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
    checkOutputOwnership("nmt", path, session->runId, request.force);
  return session;
}

} // namespace nmt
