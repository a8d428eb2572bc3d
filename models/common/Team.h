//===- models/common/Team.h - Processes training one model ------*- C++ -*-===//
//
// Data-parallel training on Open MPI: `mpirun -np N nmt train ...` starts N
// processes (ranks) that each build the same model, read the same data and
// agree on the same sequence of batches; each rank computes the loss and
// gradients of its shard of every batch (sentences r, r + N, r + 2N, ...),
// the gradients are summed across ranks, and every rank applies the same
// update, so the parameters stay identical without being sent. Rank 0
// alone validates, logs and writes checkpoints.
//
// Without mpirun (or in a build without MPI) the team is this one process
// and every operation is a no-op: a driver runs exactly as before.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_TEAM_H
#define CELLC_MODELS_COMMON_TEAM_H

#include "models/common/Math.h"
#include "models/common/Param.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

namespace models {

class Team {
public:
  /// The processes of this run: under mpirun, MPI_COMM_WORLD (MPI is
  /// started on the first call); otherwise this process alone.
  static Team &world();

  int rank() const { return rankIndex; }
  int size() const { return ranks; }
  /// Rank 0: the one that validates, logs and writes files.
  bool leader() const { return rankIndex == 0; }
  bool shared() const { return ranks > 1; }

  /// This rank's part of a batch of example indices: every size()-th one,
  /// starting at rank(), so N ranks together cover exactly the batch.
  std::vector<int64_t> shard(const std::vector<int64_t> &batch) const;

  /// Replaces every parameter's gradient by the sum over the ranks of
  /// `weight` x their gradient (a rank's weight: its share of a mean). The
  /// gradients travel in buckets of contiguous floats (one MPI_Allreduce
  /// per bucket of up to kBucketFloats), not one call per tensor.
  void sumGradients(const std::vector<Param *> &params, float weight);
  /// For a batch whose loss is a sum over items (target tokens, sentences)
  /// and whose gradient is that of the mean over this rank's items: sums
  /// `totals` = {loss, items, anything else...} over the ranks in place and
  /// makes the gradients the whole batch's mean (each rank's weighted by its
  /// share of the items), so every rank takes the step one process would.
  void combineBatch(const std::vector<Param *> &params,
                    std::vector<double> &totals);
  /// Sums `count` doubles over the ranks in place.
  void sum(double *values, int count);
  /// Rank 0's `count` doubles, on every rank.
  void broadcast(double *values, int count);
  /// Rank 0's `value` (plain data: counts, scores), on every rank.
  template <typename T> void broadcast(T &value) {
    static_assert(std::is_trivially_copyable_v<T>);
    broadcastBytes(&value, int64_t(sizeof(T)));
  }
  void broadcastBytes(void *data, int64_t bytes);
  /// Rank 0's parameter values, on every rank (a start that must not
  /// depend on each process's own initialisation).
  void broadcastValues(const std::vector<Param *> &params);
  /// Throws DataError naming `what` unless every rank has the same value.
  void requireSame(int64_t value, const std::string &what);
  /// Every rank at the same point of training: a rank that resumed another
  /// checkpoint (or none) would make other collective calls than the rest
  /// and hang them.
  void requireSameProgress(int64_t updates, int64_t epoch,
                           int64_t batchInEpoch);
  /// Gives every rank but 0 a dropout stream of its own, derived from the
  /// one it has (the same on every rank: the seed's, or the checkpoint's),
  /// so the shards of a batch do not draw the same masks.
  void separateStreams(Rng &rng) const;
  /// After an error on this rank: stops every rank (the others would wait
  /// for it forever in the next collective). Returns only when alone.
  void abortAll(int exitCode);
  /// Where errors go. Ranks other than 0 print nothing else (their stderr
  /// is /dev/null: every rank would print the same progress), but their
  /// errors, which may be their own, reach the terminal.
  std::FILE *errors() const { return errorStream ? errorStream : stderr; }
  /// "" alone, else " (rank R of N)": for messages that may be one rank's.
  std::string where() const;

  static constexpr int64_t kBucketFloats = int64_t(1) << 22;

  /// Seconds this rank spent in sumGradients (waiting for slower ranks
  /// included), and how many times it ran: what overlapping the reduction
  /// with the backward pass could save at most.
  double reductionSeconds() const { return reducing; }
  int64_t reductions() const { return reduced; }

private:
  Team();
  ~Team();
  int rankIndex = 0, ranks = 1;
  bool started = false;
  std::vector<float> bucket;
  std::FILE *errorStream = nullptr;
  double reducing = 0;
  int64_t reduced = 0;
};

} // namespace models

#endif
