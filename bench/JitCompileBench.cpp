//===- JitCompileBench.cpp - How long the JIT takes to compile each cell --===//
//
//   cellc-bench-jit [--reps N] CELLS_DIR cell...
//
// For every cell: cellc::jit::compileFile with the disk cache off (the whole
// pipeline: parse, check, passes, lowering, LLVM O3, object, ORC load),
// `reps` times in this process after one untimed compile (which pays the
// one-off LLVM/MLIR initialisation), plus the first compile on its own and
// a cached load. Prints
//   JIT cell=atr first_s=.. median_s=.. min_s=.. max_s=.. cached_s=..
// Wall time of the call, measured here (steady_clock), not the JIT's own
// figure.
//
//===----------------------------------------------------------------------===//

#include "jit/Jit.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

double compileOnce(const std::string &path,
                   const cellc::jit::CompileOptions &options, bool *cached) {
  auto t0 = std::chrono::steady_clock::now();
  auto compiled = cellc::jit::compileFile(path, options);
  auto t1 = std::chrono::steady_clock::now();
  if (!compiled) {
    std::printf("ERROR jit %s: %s\n", path.c_str(), compiled.error().c_str());
    std::exit(1);
  }
  if (cached)
    *cached = compiled->fromCache();
  return std::chrono::duration<double>(t1 - t0).count();
}

} // namespace

int main(int argc, char **argv) {
  int reps = 3;
  int first = 1;
  if (argc > 2 && std::string(argv[1]) == "--reps") {
    reps = std::atoi(argv[2]);
    first = 3;
  }
  if (argc - first < 2) {
    std::fprintf(stderr, "usage: cellc-bench-jit [--reps N] CELLS_DIR cell...\n");
    return 2;
  }
  std::string dir = argv[first];
  char cacheTemplate[] = "/tmp/cellc-bench-jit-XXXXXX";
  std::string cacheDir = mkdtemp(cacheTemplate);
  bool firstCompile = true;
  for (int i = first + 1; i < argc; ++i) {
    std::string cell = argv[i], path = dir + "/" + cell + ".cell";
    cellc::jit::CompileOptions uncached;
    uncached.cacheDir = "";
    double firstSeconds = compileOnce(path, uncached, nullptr);
    std::vector<double> times;
    for (int r = 0; r < reps; ++r)
      times.push_back(compileOnce(path, uncached, nullptr));
    std::sort(times.begin(), times.end());
    cellc::jit::CompileOptions cachedOptions;
    cachedOptions.cacheDir = cacheDir;
    compileOnce(path, cachedOptions, nullptr);
    bool hit = false;
    double cachedSeconds = compileOnce(path, cachedOptions, &hit);
    std::printf("JIT cell=%s first_s=%.4f%s median_s=%.4f min_s=%.4f "
                "max_s=%.4f cached_s=%.4f%s\n",
                cell.c_str(), firstSeconds,
                firstCompile ? "(process-first)" : "", times[times.size() / 2],
                times.front(), times.back(), cachedSeconds,
                hit ? "" : "(cache-miss)");
    std::fflush(stdout);
    firstCompile = false;
  }
  std::string cleanup = "rm -rf '" + cacheDir + "'";
  if (std::system(cleanup.c_str()) != 0)
    std::fprintf(stderr, "could not remove %s\n", cacheDir.c_str());
  return 0;
}
