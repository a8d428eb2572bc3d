//===- models/nmt/Average.h - Checkpoint averaging --------------*- C++ -*-===//
//
// `nmt average --out AVG A B ...`: the mean of the parameters of
// checkpoints of one model (fairseq's scripts/average_checkpoints.py,
// Marian's scripts/checkpoints/average.py): the weights of a run's last
// epochs, averaged, often decode better than any one of them. Everything
// else (options, vocabularies, Adam moments, training state) is the first
// checkpoint's, under a new run id, so that a run resumed from the average
// is a run of its own.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_AVERAGE_H
#define CELLC_MODELS_NMT_AVERAGE_H

#include "models/nmt/Trainer.h"

#include <memory>
#include <string>
#include <vector>

namespace nmt {

/// The checkpoints' mean. Throws DataError naming the file that cannot be
/// read or whose vocabularies, architecture or parameters differ from the
/// first's.
std::unique_ptr<Session>
averageCheckpoints(const std::vector<std::string> &paths);

/// Writes `session` to `out`, which must not exist: averaging never
/// replaces a file (DataError naming it). The checkpoint appears whole or
/// not at all.
void saveAsNewFile(const Session &session, const std::string &out);

} // namespace nmt

#endif
