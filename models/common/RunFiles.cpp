//===- models/common/RunFiles.cpp - A training run's files ----------------===//

#include "models/common/RunFiles.h"

#include "models/common/CheckpointFile.h"
#include "models/common/Data.h"

#include <cstdio>
#include <filesystem>
#include <ostream>
#include <random>
#include <sys/stat.h>

namespace models {

namespace {

bool exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

} // namespace

std::vector<std::string> runFilesOf(const std::string &out) {
  return {out, out + ".best", out + ".tmp", out + ".best.tmp", out + ".lock"};
}

uint64_t newRunId() {
  std::random_device device;
  uint64_t id = 0;
  while (id == 0) // 0 marks a format-1 checkpoint
    id = uint64_t(device()) << 32 | device();
  return id;
}

void checkOutputOwnership(const std::string &program, const std::string &path,
                          uint64_t runId, bool force) {
  if (force || !exists(path))
    return;
  uint64_t theirs = 0;
  try {
    theirs = peekRunId(path, program);
  } catch (const DataError &error) {
    throw DataError(std::string(error.what()) +
                    "; refusing to overwrite it (--force overwrites)");
  }
  if (theirs == runId)
    return;
  throw DataError(path + " holds the checkpoint of another run; refusing to "
                         "overwrite it (continue that run with --resume, "
                         "choose another --out, or --force to overwrite)");
}

void removeStaleTemporaries(const std::string &program,
                            const std::string &out) {
  for (const std::string &path : {out + ".tmp", out + ".best.tmp"})
    if (exists(path) && std::remove(path.c_str()) == 0)
      std::fprintf(stderr,
                   "%s: removed %s (a partial save of an interrupted run)\n",
                   program.c_str(), path.c_str());
}

std::string resumeSource(const std::string &program, const std::string &out,
                         const std::string &resumeFrom) {
  std::string source = resumeFrom.empty() ? out : resumeFrom;
  if (exists(source))
    return source;
  if (exists(source + ".best")) {
    std::fprintf(stderr,
                 "%s: %s is missing (a kill during its first save?); "
                 "resuming from %s.best\n",
                 program.c_str(), source.c_str(), source.c_str());
    return source + ".best";
  }
  if (!resumeFrom.empty())
    throw DataError(source + ": no such checkpoint to resume from");
  std::fprintf(stderr, "%s: %s does not exist yet; starting a new run\n",
               program.c_str(), out.c_str());
  return "";
}

bool samePath(const std::string &a, const std::string &b) {
  std::error_code errorA, errorB;
  auto canonicalA = std::filesystem::weakly_canonical(a, errorA);
  auto canonicalB = std::filesystem::weakly_canonical(b, errorB);
  return !errorA && !errorB && canonicalA == canonicalB;
}

void checkSameSetup(const std::string &path,
                    const std::map<std::string, std::string> &stored,
                    const std::map<std::string, std::string> &requested,
                    const std::set<std::string> &given,
                    const std::set<std::string> &changeable,
                    const std::set<std::string> &paths) {
  auto value = [](const std::map<std::string, std::string> &m,
                  const std::string &key) {
    auto it = m.find(key);
    return it == m.end() ? std::string() : it->second;
  };
  std::string differences;
  for (const std::string &key : given) {
    std::string theirs = value(stored, key), ours = value(requested, key);
    bool same = theirs == ours || (paths.count(key) && !theirs.empty() &&
                                   !ours.empty() && samePath(theirs, ours));
    if (!changeable.count(key) && !same)
      differences += "\n  --" + key + ": the checkpoint has '" + theirs +
                     "', the command line '" + ours + "'";
  }
  if (!differences.empty())
    throw DataError(path +
                    " was trained with other settings than the "
                    "command line asks for:" +
                    differences +
                    "\nleave them out to continue the checkpoint, or start "
                    "a new run with another --out");
}

std::map<std::string, std::string>
resumedOptions(const std::map<std::string, std::string> &stored,
               const std::map<std::string, std::string> &requested,
               const std::set<std::string> &given,
               const std::set<std::string> &changeable,
               const std::set<std::string> &fromCommandLine) {
  std::map<std::string, std::string> merged = stored;
  for (const auto &[key, value] : requested)
    if ((given.count(key) && changeable.count(key)) ||
        fromCommandLine.count(key))
      merged[key] = value;
  return merged;
}

void saveOrWarn(const std::string &program, const std::function<void()> &save,
                std::ostream &log, bool final) {
  try {
    save();
  } catch (const DataError &error) {
    if (final)
      throw DataError(std::string(error.what()) +
                      " (the previous checkpoint is intact)");
    std::string text = std::string(error.what()) +
                       "; training goes on, the previous checkpoint is "
                       "intact and the next save tries again";
    log << "warning: " << text << std::endl;
    std::fprintf(stderr, "\n%s: warning: %s\n", program.c_str(),
                 text.c_str());
  }
}

} // namespace models
