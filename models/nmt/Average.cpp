//===- models/nmt/Average.cpp - Checkpoint averaging ----------------------===//

#include "models/nmt/Average.h"

#include "models/common/RunFiles.h"
#include "models/nmt/Translator.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace nmt {

std::unique_ptr<Session>
averageCheckpoints(const std::vector<std::string> &paths) {
  if (paths.empty())
    throw DataError("average: no checkpoints");
  std::unique_ptr<Session> mean = Session::load(paths[0]);
  std::vector<Param *> params = mean->model->params();
  // Summed in double, in file order: N copies of one value average to it.
  std::vector<std::vector<double>> sums;
  for (Param *param : params)
    sums.emplace_back(param->value.begin(), param->value.end());
  for (size_t f = 1; f < paths.size(); ++f) {
    std::unique_ptr<Session> other = Session::load(paths[f]);
    checkSameModel(*mean, paths[0], *other, paths[f]);
    std::vector<Param *> theirs = other->model->params();
    for (size_t p = 0; p < params.size(); ++p)
      for (size_t i = 0; i < sums[p].size(); ++i)
        sums[p][i] += theirs[p]->value[i];
  }
  const double count = double(paths.size());
  for (size_t p = 0; p < params.size(); ++p)
    for (size_t i = 0; i < sums[p].size(); ++i)
      params[p]->value[i] = float(sums[p][i] / count);
  mean->runId = newRunId();
  return mean;
}

void saveAsNewFile(const Session &session, const std::string &out) {
  if (::access(out.c_str(), F_OK) == 0)
    throw DataError(out + ": exists; nmt average writes a new file only "
                          "(remove it or choose another --out)");
  // Written whole under another name, then linked to `out`: link() fails
  // rather than replace a file that appeared meanwhile.
  const std::string partial = out + ".partial";
  session.save(partial);
  int failed = ::link(partial.c_str(), out.c_str());
  int error = errno;
  std::remove(partial.c_str());
  if (failed)
    throw DataError(out + ": cannot write: " + std::strerror(error));
}

} // namespace nmt
