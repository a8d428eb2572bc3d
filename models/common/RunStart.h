//===- models/common/RunStart.h - Starting or resuming a run ----*- C++ -*-===//
//
// What every driver's `train` does before the first update, in the order
// that makes a killed run resumable (the steps are in RunFiles.h): clear
// the temporaries of an interrupted save; with --resume, continue OUT (or
// --resume-from's file, or OUT.best) with the checkpoint's options,
// refusing a command line that contradicts them; load the data the run
// trains on; and refuse to write over another run's checkpoint.
//
// A driver's Session provides `static load(path)`, `options` (an option
// table, OptionTable.h, with toMap, static fromMap and `out`), `runId`,
// `continuesLog`, `state.epoch` and `state.updates`, and a constructor
// from (options, data).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_RUNSTART_H
#define CELLC_MODELS_COMMON_RUNSTART_H

#include "models/common/Math.h"
#include "models/common/OptionTable.h"
#include "models/common/RunFiles.h"
#include "models/common/RunLog.h"
#include "models/common/Team.h"

#include <cstdio>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace models {

/// Where a run stands, in every driver's checkpoint: a resumed run goes on
/// from the position in the epoch, with the loss of the epoch so far and
/// the dropout stream as they were. A driver's TrainState adds its own
/// metrics.
struct RunState {
  int64_t epoch = 0, batchInEpoch = 0, updates = 0;
  bool finished = false;
  /// The current epoch's summed loss so far, so that a resumed epoch
  /// reports the loss of the whole epoch.
  double epochLossSum = 0;
  Rng dropoutRng{0};
};

/// Which run a session belongs to, in every driver's Session.
struct RunIdentity {
  /// Identifies the run across its checkpoints (0: a format-1 checkpoint),
  /// so that one run never overwrites another's.
  uint64_t runId = 0;
  /// Set by --resume of OUT itself: the run's event log goes on, less the
  /// events its killed predecessor logged after this checkpoint
  /// (dropEventsAfter).
  bool continuesLog = false;
};

/// `train` as the command line asked for it.
template <typename Options> struct RunRequest {
  Options options;             // the command line's, defaults filled in
  std::set<std::string> given; // option names (toMap keys) given explicitly
  bool resume = false;         // --resume: continue options.out
  bool force = false;          // --force: overwrite another run's checkpoint
  // --resume-from: continue this file instead (a default, so that drivers
  // without the option may leave it out of their initialisers).
  std::string resumeFrom = "";
};

/// How a driver's runs resume. Which options may differ from the
/// checkpoint's, which always come from the command line, and which name
/// files is the option table's to say (OptionTable.h resumeRules).
template <typename Session, typename Options, typename Data> struct RunRules {
  /// The driver's name, starting its messages.
  std::string program;
  /// False when the resumed session has nothing left to train (saying so);
  /// else readies it to go on.
  std::function<bool(Session &, const RunRequest<Options> &,
                     const std::string &path)>
      continues;
  std::function<Data(const Options &)> loadData;
  /// Puts the command line's options in the form a checkpoint stores them
  /// (nmt: --enc-layers 0 as the architecture's count), when set.
  std::function<void(Options &)> normalize = {};
};

/// The checkpoint at `path` with the command line's changeable options, or
/// null when it has finished. Throws DataError listing the options the
/// command line contradicts.
template <typename Session, typename Options, typename Data>
std::unique_ptr<Session>
resumeSession(const RunRules<Session, Options, Data> &rules,
              const std::string &path, const RunRequest<Options> &request) {
  std::unique_ptr<Session> session = Session::load(path);
  const ResumeRules table = resumeRules<Options>();
  checkSameSetup(path, session->options.toMap(), request.options.toMap(),
                 request.given, table.changeable, table.paths);
  session->options = Options::fromMap(
      resumedOptions(session->options.toMap(), request.options.toMap(),
                     request.given, table.changeable, table.fromCommandLine));
  if (!request.resumeFrom.empty() && request.resumeFrom != request.options.out)
    session->runId = newRunId(); // a branch of the run: a run of its own
  else
    session->continuesLog = true;
  if (!rules.continues(*session, request, path))
    return nullptr;
  std::fprintf(stderr, "resuming %s at epoch %lld, update %lld; writing %s\n",
               path.c_str(), (long long)session->state.epoch + 1,
               (long long)session->state.updates, session->options.out.c_str());
  return session;
}

/// The session to train and its data, or null (with a message) when the
/// resumed run has already finished. Throws DataError naming the file or
/// the contradicting options.
template <typename Session, typename Options, typename Data>
std::unique_ptr<Session>
prepareTraining(const RunRules<Session, Options, Data> &rules,
                RunRequest<Options> request, Data &data) {
  if (rules.normalize)
    rules.normalize(request.options);
  const std::string &out = request.options.out;
  removeStaleTemporaries(rules.program, out);
  std::unique_ptr<Session> session;
  if (request.resume || !request.resumeFrom.empty()) {
    std::string source = resumeSource(rules.program, out, request.resumeFrom);
    if (!source.empty()) {
      session = resumeSession(rules, source, request);
      if (!session)
        return nullptr;
    }
  }
  data = rules.loadData(session ? session->options : request.options);
  if (!session)
    session = std::make_unique<Session>(request.options, data);
  for (const std::string &path : {out, out + ".best"})
    checkOutputOwnership(rules.program, path, session->runId, request.force);
  return session;
}

/// The training log of a session (RunLog.h): LOG (default OUT.log) for
/// people, LOG.jsonl (default OUT.jsonl) for plots; with --resume of OUT
/// itself, less the events its killed predecessor logged after the
/// checkpoint. Rank 0 alone writes them; a log must be none of the run's
/// files (its checkpoints and the data the table's path options name).
/// The first event holds the options.
template <typename Session>
std::unique_ptr<RunLog> openRunLog(const std::string &program,
                                   const Session &session) {
  const auto &options = session.options;
  using Options = std::decay_t<decltype(options)>;
  std::string base = options.log.empty() ? options.out : options.log;
  std::string textPath =
      options.log.empty() ? options.out + ".log" : options.log;
  std::vector<std::string> runFiles = runFilesOf(options.out);
  OptionMap map = options.toMap();
  for (const std::string &name : resumeRules<Options>().paths)
    runFiles.push_back(map[name]);
  bool writes = Team::world().leader();
  if (session.continuesLog && writes)
    dropEventsAfter(program, base + ".jsonl", session.state.epoch,
                    session.state.updates);
  auto log = std::make_unique<RunLog>(program, writes ? textPath : "/dev/null",
                                      writes ? base + ".jsonl" : "/dev/null",
                                      runFiles);
  log->configEvent(session.state.updates, map);
  return log;
}

} // namespace models

#endif
