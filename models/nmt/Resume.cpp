//===- models/nmt/Resume.cpp - Starting or resuming a run -----------------===//

#include "models/nmt/Resume.h"

#include <cstdio>
#include <sys/stat.h>

namespace nmt {

namespace {

bool exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

/// A kill during a save leaves PATH.tmp behind; it is never read.
void removeStaleTemporaries(const std::string &out) {
  for (const std::string &path : {out + ".tmp", out + ".best.tmp"})
    if (exists(path) && std::remove(path.c_str()) == 0)
      std::fprintf(stderr,
                   "nmt: removed %s (a partial save of an "
                   "interrupted run)\n",
                   path.c_str());
}

/// The file to resume from, or "" for a new run.
std::string resumeSource(const TrainRequest &request) {
  const std::string &out = request.options.out;
  std::string source = request.resumeFrom.empty() ? out : request.resumeFrom;
  if (exists(source))
    return source;
  if (exists(source + ".best")) {
    std::fprintf(stderr,
                 "nmt: %s is missing (a kill during its first save?); "
                 "resuming from %s.best\n",
                 source.c_str(), source.c_str());
    return source + ".best";
  }
  if (!request.resumeFrom.empty())
    throw DataError(source + ": no such checkpoint to resume from");
  std::fprintf(stderr, "nmt: %s does not exist yet; starting a new run\n",
               out.c_str());
  return "";
}

/// Throws, listing every option the command line sets differently from the
/// checkpoint (the architecture, data and optimiser must stay the same).
void checkSameSetup(const std::string &path, const TrainOptions &stored,
                    const TrainRequest &request) {
  auto theirs = stored.toMap(), ours = request.options.toMap();
  std::string differences;
  for (const std::string &key : request.given)
    if (!optionsChangeableOnResume().count(key) && theirs[key] != ours[key])
      differences += "\n  --" + key + ": the checkpoint has '" + theirs[key] +
                     "', the command line '" + ours[key] + "'";
  if (!differences.empty())
    throw DataError(path +
                    " was trained with other settings than the "
                    "command line asks for:" +
                    differences +
                    "\nleave them out to continue the checkpoint, or start "
                    "a new run with another --out");
}

/// The checkpoint at `path` with the command line's run-length and
/// reporting options; null when it has finished and nothing extends it.
std::unique_ptr<Session> resumeSession(const std::string &path,
                                       const TrainRequest &request) {
  auto session = Session::load(path);
  checkSameSetup(path, session->options, request);
  auto merged = session->options.toMap(), ours = request.options.toMap();
  for (const std::string &key : request.given)
    if (optionsChangeableOnResume().count(key))
      merged[key] = ours[key];
  // Where to write and report belongs to this command, never to the run
  // the checkpoint was copied from.
  for (const char *key : {"out", "log", "progress", "skip-nonfinite"})
    merged[key] = ours[key];
  session->options = TrainOptions::fromMap(merged);
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
  removeStaleTemporaries(out);
  std::unique_ptr<Session> session;
  bool resume = request.resume || !request.resumeFrom.empty();
  if (resume) {
    std::string source = resumeSource(request);
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
    checkOutputOwnership(path, session->runId, request.force);
  return session;
}

} // namespace nmt
