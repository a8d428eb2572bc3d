//===- models/common/CheckpointFile.h - Checksummed files ------*- C++ -*-===//
//
// The container every driver's checkpoint is stored in (the magic says
// NMT for history: the payload names its driver). Format 2:
//
//   u64 22, "CELLC-NMT-CHECKPOINT-2", u64 payload size, u64 FNV-1a 64 of
//   the payload, payload
//
// Format 1 (no size, no checksum: the payload follows the magic) is still
// read, so older runs can be resumed. Writing goes to PATH.tmp, is fsynced
// and renamed over PATH: a kill or a full disk leaves the previous file.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_CHECKPOINTFILE_H
#define CELLC_MODELS_COMMON_CHECKPOINTFILE_H

#include <cstdint>
#include <string>

namespace models {

/// FNV-1a, 64 bits: enough to catch flipped bits and torn writes.
uint64_t fnv1a64(const std::string &bytes);

struct CheckpointBytes {
  int version = 0;
  std::string payload;
};

/// Reads and verifies `path`. DataError naming the file: cannot open,
/// empty, not a checkpoint (of `driver`, as the message says), a newer
/// format, truncated, checksum mismatch.
CheckpointBytes readCheckpointFile(const std::string &path,
                                   const std::string &driver = "nmt");

/// The run id stored at the start of a format-2 payload, reading only the
/// header (0 for format 1). DataError as readCheckpointFile.
uint64_t peekRunId(const std::string &path, const std::string &driver = "nmt");

/// Writes `payload` in format 2 to path.tmp, fsyncs it and renames it over
/// `path`. On any failure the temporary is removed, `path` is untouched and
/// a DataError says why (e.g. "No space left on device").
void writeCheckpointFile(const std::string &path, const std::string &payload);

} // namespace models

#endif
