//===- Subcommands.h - `cellc run`, `cellc plan`, `cellc check` -*- C++ -*-===//
//
// `cellc run FILE.cell --dir D` JIT-compiles a cell and runs it on .npy
// arrays from D (RunCommand.cpp). `cellc check FILE.cell` runs the separate
// `cellc-check` tool installed next to cellc (it links LibTorch, which cellc
// does not).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TOOLS_CELLC_SUBCOMMANDS_H
#define CELLC_TOOLS_CELLC_SUBCOMMANDS_H

#include "cellrt/InitScheme.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace cellc {

/// What `cellc run` was asked to do.
struct RunOptions {
  std::string cellFile;
  std::string cellName;
  std::map<std::string, int64_t> fixedDims;
  std::string dir;
  bool reverse = false;
  /// auto (the GPU when there is one, else the CPU), cpu or gpu.
  std::string device = "auto";
  /// std::nullopt: the JIT's default cache; "": no cache.
  std::optional<std::string> cacheDir;
  /// A shared library linked from `cellc FILE -o X.o`: run its code
  /// instead of compiling (the differential tester's AOT leg).
  std::string objectFile;
  /// `--probe NAME`: values of the step written as probe_NAME.npy.
  std::vector<std::string> probes;
  /// `--params P.npz`: every param from one archive (default: DIR/params.npz
  /// when it exists, else param_<name>.npy files).
  std::string paramsFile;
  /// `--init-seed N`: params the directory (or archive) does not give are
  /// drawn from seed N by the cell's initialisers (Cell::initParams).
  std::optional<uint64_t> initSeed;
  /// `--init-fallback SCHEME`: how a drawn param without an initialiser of
  /// its own is drawn.
  cellrt::InitScheme initFallback = cellrt::InitScheme::fanIn();
};

/// Parses `run`'s arguments (argv[0] is "run"). Returns "" or an error.
std::string parseRunArguments(int argc, char **argv, RunOptions &options);

/// Compiles and runs the cell on the arrays in `options.dir` and writes the
/// results there. Returns "" on success, else the error (diagnostics of a
/// bad cell, or the array that is missing or mis-shaped). `log` gets one
/// line per file written.
std::string runOnDirectory(const RunOptions &options, llvm::raw_ostream &log);

/// `cellc run ...`: argv[0] is "run". Returns the exit code.
int runCommand(int argc, char **argv);

/// `cellc plan FILE`: prints the plan an object, shared library or tables
/// file carries, as text (argv[0] is "plan"). Returns the exit code.
int planCommand(int argc, char **argv);

/// `cellc check ...`: runs `cellc-check` from cellc's own folder with the
/// remaining arguments (argv[0] is "check"). Returns its exit code.
int checkCommand(int argc, char **argv, const char *cellcArgv0);

} // namespace cellc

#endif // CELLC_TOOLS_CELLC_SUBCOMMANDS_H
