//===- Jit.h - Compile a .cell in-process and run it at once ----*- C++ -*-===//
//
// The JIT runs exactly cellc's pipeline (parse, check, cell dialect, hoist /
// stack / fuse / derive-backward, lowering, LLVM O3, object emission) in
// this process, loads the object with ORC's LLJIT and hands out the
// `cellrt_image` the runtime runs:
//
//   auto compiled = cellc::jit::compileFile("cells/atr.cell", {});
//   if (!compiled) { report(compiled.error()); return; }
//   auto cell = cellrt::Cell::load(compiled->image());
//
// Objects are cached on disk, keyed by a hash of the source and its display
// name, the options, the host CPU and the compiler build, so a second
// compile of the same cell only loads the object (and replays the warnings
// its compile reported). Each entry ends with a SHA-256 of its contents,
// checked before the object is loaded: a truncated or damaged entry is
// compiled again and replaced (atomically, so concurrent compiles of the
// same cell are safe). Nothing here prints or exits: errors, including the
// front end's located diagnostics (`atr.cell:4:7: error: ...` with the line
// and a caret), are returned as text.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_JIT_JIT_H
#define CELLC_JIT_JIT_H

#include "cellrt/Kernel.h"
#include "cellrt/Plan.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cellc::jit {

/// What to compile and where to cache it.
struct CompileOptions {
  /// The cell to compile; empty: the file's only cell (an error listing the
  /// cells when the file has several).
  std::string cellName;
  /// Symbolic dimensions fixed at compile time (`--dim H=512`).
  std::map<std::string, int64_t> fixedDims;
  /// Include the backward kernels and the training plan.
  bool withBackward = true;
  /// Values of the step the kernels also write per step (`cellc --probe`):
  /// ForwardArgs::probes / StepArgs::probes receive them.
  std::vector<std::string> probes;
  /// Target CPU; empty: this host.
  std::string cpu;
  /// The cache folder. std::nullopt: defaultCacheDir(); "": no cache.
  std::optional<std::string> cacheDir;
};

/// $CELLC_CACHE_DIR, else $XDG_CACHE_HOME/cellc, else ~/.cache/cellc
/// ("" when none of them can be determined).
std::string defaultCacheDir();

/// One compiled cell, loaded into this process. Move-only; the image stays
/// valid as long as the CompiledCell lives.
class CompiledCell {
public:
  CompiledCell(CompiledCell &&) noexcept;
  CompiledCell &operator=(CompiledCell &&) noexcept;
  ~CompiledCell();

  /// The plan, kernels and kernel names, ready for cellrt::Cell::load.
  const cellrt_image &image() const;
  /// The compiled cell's name.
  const std::string &cellName() const;
  /// Warnings the front end reported (e.g. unused params), located like
  /// cellc's; empty when there were none. A cache hit replays the warnings
  /// of the compile that made the entry.
  const std::string &warnings() const;
  /// True when the object was loaded from the disk cache (MLIR skipped).
  bool fromCache() const;
  /// Wall time of compileFile/compileSource: the whole pipeline, or only
  /// reading and loading the cached object.
  double compileSeconds() const;
  /// The cached object's path; empty when caching is off.
  const std::string &objectPath() const;

  struct Impl;

private:
  explicit CompiledCell(std::unique_ptr<Impl> impl);
  friend struct CompiledCellFactory;
  std::unique_ptr<Impl> impl;
};

/// A compiled cell, or the error text.
using CompileResult = cellrt::Expected<CompiledCell>;

/// Compiles the cell file at `path`.
CompileResult compileFile(const std::string &path,
                          const CompileOptions &options);

/// Compiles `source`; diagnostics name it `displayName`.
CompileResult compileSource(const std::string &source,
                            const std::string &displayName,
                            const CompileOptions &options);

/// The GPU form of a cell: the plan's tables the executor runs and the PTX
/// of its kernels (what `cellc -emit=tables` and `cellc --target=nvptx
/// -emit=ptx` write), for cellrt::cuda::loadCell. Not cached: PTX is
/// compiled again by the driver anyway.
struct GpuCode {
  std::string cellName, tables, ptx, warnings;
};
cellrt::Expected<GpuCode> compileFileForGPU(const std::string &path,
                                            const CompileOptions &options,
                                            const std::string &gpuArch =
                                                "sm_80");
cellrt::Expected<GpuCode> compileSourceForGPU(const std::string &source,
                                              const std::string &displayName,
                                              const CompileOptions &options,
                                              const std::string &gpuArch =
                                                  "sm_80");

/// The version string that is part of every cache key.
const char *cacheVersion();

/// The compiler build this process runs, as the cache keys name it: the
/// path, size and modification time of the file holding the JIT (the
/// executable, or libcellc-jit.so when loaded by a program such as Python).
std::string compilerIdentity();

} // namespace cellc::jit

#endif // CELLC_JIT_JIT_H
