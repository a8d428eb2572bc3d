//===- models/common/Team.cpp - Processes training one model --------------===//

#include "models/common/Team.h"

#include "models/common/Data.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <unistd.h>

#ifdef CELLC_HAVE_MPI
#include <mpi.h>
#endif

namespace models {

namespace {

/// True when a launcher (mpirun, or a PMIx-based one) started this process
/// as one of several ranks.
bool launchedAsRank() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(name))
      return true;
  return false;
}

} // namespace

Team &Team::world() {
  static Team team;
  return team;
}

Team::Team() {
#ifdef CELLC_HAVE_MPI
  // A single process is never an MPI singleton: initialising MPI costs
  // time and may look for a launcher, for nothing.
  if (!launchedAsRank())
    return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  started = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rankIndex);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (leader())
    return;
  int terminal = dup(2), null = open("/dev/null", O_WRONLY);
  if (terminal < 0 || null < 0)
    return;
  errorStream = fdopen(terminal, "w");
  // Unbuffered: MPI_Abort right after an error message flushes nothing.
  if (errorStream)
    setvbuf(errorStream, nullptr, _IONBF, 0);
  dup2(null, 2);
  close(null);
#else
  if (launchedAsRank())
    std::fprintf(stderr, "warning: started by an MPI launcher, but this "
                         "build has no MPI: every rank trains alone\n");
#endif
}

Team::~Team() {
#ifdef CELLC_HAVE_MPI
  if (started)
    MPI_Finalize();
#endif
}

std::vector<int64_t> Team::shard(const std::vector<int64_t> &batch) const {
  std::vector<int64_t> part;
  for (size_t i = size_t(rankIndex); i < batch.size(); i += size_t(ranks))
    part.push_back(batch[i]);
  return part;
}

void Team::sumGradients(const std::vector<Param *> &params, float weight) {
#ifdef CELLC_HAVE_MPI
  if (!shared())
    return;
  auto start = std::chrono::steady_clock::now();
  auto weighted = [weight](float value) { return weight * value; };
  bucket.resize(size_t(kBucketFloats));
  // Parameters [first, last) fill one bucket; a tensor larger than a whole
  // bucket is reduced in place on its own.
  size_t first = 0;
  while (first < params.size()) {
    int64_t filled = 0;
    size_t last = first;
    while (last < params.size() &&
           filled + int64_t(params[last]->grad.size()) <= kBucketFloats)
      filled += int64_t(params[last++]->grad.size());
    if (last == first) {
      std::vector<float> &grad = params[first]->grad;
      std::transform(grad.begin(), grad.end(), grad.begin(), weighted);
      MPI_Allreduce(MPI_IN_PLACE, grad.data(), int(grad.size()), MPI_FLOAT,
                    MPI_SUM, MPI_COMM_WORLD);
      ++first;
      continue;
    }
    float *cursor = bucket.data();
    for (size_t i = first; i < last; ++i)
      cursor = std::transform(params[i]->grad.begin(), params[i]->grad.end(),
                              cursor, weighted);
    MPI_Allreduce(MPI_IN_PLACE, bucket.data(), int(filled), MPI_FLOAT,
                  MPI_SUM, MPI_COMM_WORLD);
    const float *source = bucket.data();
    for (size_t i = first; i < last; ++i) {
      std::vector<float> &grad = params[i]->grad;
      std::copy(source, source + grad.size(), grad.begin());
      source += grad.size();
    }
    first = last;
  }
  reducing += std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            start)
                  .count();
  ++reduced;
#else
  (void)params, (void)weight;
#endif
}

void Team::combineBatch(const std::vector<Param *> &params,
                        std::vector<double> &totals) {
  if (!shared())
    return;
  double items = totals.at(1);
  sum(totals.data(), int(totals.size()));
  sumGradients(params, totals[1] > 0 ? float(items / totals[1]) : 0.f);
}

void Team::sum(double *values, int count) {
#ifdef CELLC_HAVE_MPI
  if (shared())
    MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
#else
  (void)values, (void)count;
#endif
}

void Team::broadcast(double *values, int count) {
#ifdef CELLC_HAVE_MPI
  if (shared())
    MPI_Bcast(values, count, MPI_DOUBLE, 0, MPI_COMM_WORLD);
#else
  (void)values, (void)count;
#endif
}

void Team::broadcastBytes(void *data, int64_t bytes) {
#ifdef CELLC_HAVE_MPI
  if (shared())
    MPI_Bcast(data, int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD);
#else
  (void)data, (void)bytes;
#endif
}

std::string Team::where() const {
  if (!shared())
    return "";
  return " (rank " + std::to_string(rankIndex) + " of " +
         std::to_string(ranks) + ")";
}

void Team::broadcastValues(const std::vector<Param *> &params) {
#ifdef CELLC_HAVE_MPI
  if (!shared())
    return;
  for (Param *param : params)
    for (int64_t begin = 0; begin < param->size(); begin += kBucketFloats)
      MPI_Bcast(param->value.data() + begin,
                int(std::min(kBucketFloats, param->size() - begin)),
                MPI_FLOAT, 0, MPI_COMM_WORLD);
#else
  (void)params;
#endif
}

void Team::requireSame(int64_t value, const std::string &what) {
#ifdef CELLC_HAVE_MPI
  if (!shared())
    return;
  long long bounds[2] = {value, -value};
  MPI_Allreduce(MPI_IN_PLACE, bounds, 2, MPI_LONG_LONG, MPI_MAX,
                MPI_COMM_WORLD);
  if (bounds[0] != -bounds[1])
    throw DataError("the ranks disagree on " + what + " (" +
                    std::to_string(-bounds[1]) + " to " +
                    std::to_string(bounds[0]) +
                    "): every rank must see the same data and options");
#else
  (void)value, (void)what;
#endif
}

void Team::requireSameProgress(int64_t updates, int64_t epoch,
                               int64_t batchInEpoch) {
  requireSame(updates, "the update count (--resume)");
  requireSame(epoch * 1000003 + batchInEpoch,
              "the position in the epoch (--resume)");
}

void Team::separateStreams(Rng &rng) const {
  if (rankIndex > 0)
    rng.reseed(rng.s[0] ^ (0x9E3779B97F4A7C15ull * uint64_t(rankIndex)));
}

void Team::abortAll(int exitCode) {
#ifdef CELLC_HAVE_MPI
  if (shared())
    MPI_Abort(MPI_COMM_WORLD, exitCode);
#else
  (void)exitCode;
#endif
}

} // namespace models
