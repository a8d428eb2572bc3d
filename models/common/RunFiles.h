//===- models/common/RunFiles.h - A training run's files --------*- C++ -*-===//
//
// What a driver's `train` does with its files before the first update, the
// same for every driver: every run has a random id stored in its
// checkpoints and never overwrites another run's; --resume continues OUT
// (or OUT.best when a kill during the first save left only that) with the
// options the checkpoint was trained with; the partial temporaries of an
// interrupted save are removed. Messages on stderr start with the driver's
// name.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_RUNFILES_H
#define CELLC_MODELS_COMMON_RUNFILES_H

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace models {

/// The files a run writing `out` owns: OUT, OUT.best, their save
/// temporaries and the lock (RunLock.h). Its logs must be none of them.
std::vector<std::string> runFilesOf(const std::string &out);

/// A random, nonzero run id (0 marks a format-1 checkpoint).
uint64_t newRunId();

/// Throws unless `path` is absent or a checkpoint of run `runId` (or
/// `force`): a run must not overwrite another run's checkpoint.
void checkOutputOwnership(const std::string &program, const std::string &path,
                          uint64_t runId, bool force);

/// Removes OUT.tmp and OUT.best.tmp, which a kill during a save leaves
/// behind (they are never read), saying so.
void removeStaleTemporaries(const std::string &program, const std::string &out);

/// The checkpoint --resume continues: `resumeFrom` (or `out` when empty),
/// else its .best (saying so), else "" for a new run (saying so). Throws
/// DataError when `resumeFrom` names neither.
std::string resumeSource(const std::string &program, const std::string &out,
                         const std::string &resumeFrom);

/// Throws DataError listing every option the command line gave (`given`)
/// with another value than the checkpoint at `path` stored, except the
/// `changeable` ones: a resumed run keeps its architecture, data and
/// optimiser. The `paths` options name files: two spellings of one file
/// (`a/../b/f` and `b/f`) are the same value.
void checkSameSetup(const std::string &path,
                    const std::map<std::string, std::string> &stored,
                    const std::map<std::string, std::string> &requested,
                    const std::set<std::string> &given,
                    const std::set<std::string> &changeable,
                    const std::set<std::string> &paths = {});

/// Whether `a` and `b` name one file, existing or not (compared as
/// std::filesystem::weakly_canonical paths from the working folder).
bool samePath(const std::string &a, const std::string &b);

/// The options a resumed run trains with: the checkpoint's, except the
/// `changeable` ones the command line gave and the `fromCommandLine` ones
/// (where to write and report belongs to this command, never to the run
/// the checkpoint was copied from).
std::map<std::string, std::string>
resumedOptions(const std::map<std::string, std::string> &stored,
               const std::map<std::string, std::string> &requested,
               const std::set<std::string> &given,
               const std::set<std::string> &changeable,
               const std::set<std::string> &fromCommandLine);

/// Saves a checkpoint at a scheduled point with `save`: a DataError is
/// logged and warned about (`PROGRAM: warning: ...`) and training goes on,
/// the previous checkpoint intact and the next save trying again; unless
/// the save is the `final` one, which throws.
void saveOrWarn(const std::string &program, const std::function<void()> &save,
                std::ostream &log, bool final);

} // namespace models

#endif
