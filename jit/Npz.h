//===- Npz.h - Read and write NumPy .npz archives ---------------*- C++ -*-===//
//
// A cell's parameters as one file: the archive `np.savez(path, W=..., b=...)`
// writes and `np.load(path)` reads, a ZIP of .npy entries named after the
// arrays. Reads stored and deflated entries (np.savez and
// np.savez_compressed, with or without zip64 extra fields) and checks each
// entry's CRC-32; writes stored entries as np.savez does. Errors are
// returned as text starting with the path; nothing throws or prints.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_JIT_NPZ_H
#define CELLC_JIT_NPZ_H

#include "jit/Npy.h"

#include <map>
#include <string>

namespace cellc::npy {

/// Every array of the archive at `path` (replacing what `arrays` held),
/// keyed by its name without `.npy`. Returns "" on success; a damaged or
/// hostile archive is an error, never a read out of bounds or an
/// allocation its bytes cannot justify. `path` must be a regular file (the
/// ZIP directory is at its end): a FIFO or a device is an error.
std::string readArchive(const std::string &path,
                        std::map<std::string, Array> &arrays);

/// readArchive on the bytes of an archive already in memory; `name`
/// prefixes errors.
std::string parseArchive(const std::string &bytes, const std::string &name,
                         std::map<std::string, Array> &arrays);

/// One float32 array to write: its shape and `product(shape)` values.
struct ArchiveEntry {
  std::vector<int64_t> shape;
  const float *data = nullptr;
};

/// Writes `arrays` (as NAME.npy entries) to `path` through a temporary file
/// renamed into place, so a failed write never leaves half an archive.
/// Returns "" on success.
std::string writeArchive(const std::string &path,
                         const std::map<std::string, ArchiveEntry> &arrays);

} // namespace cellc::npy

#endif // CELLC_JIT_NPZ_H
