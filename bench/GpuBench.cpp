//===- GpuBench.cpp - cellc's cells on the GPU through cellrt-cuda --------===//
//
// `cellc-gpu`: the same runner as `cellc` (makeCellRunner: host arrays in,
// host arrays out, one Tape reused), over a cell loaded with
// cellrt::cuda::loadCell from cellc's plan and PTX (made at build time into
// gen-ptx/; CELLC_BENCH_PTX_DIR overrides the folder on another machine).
// A timed iteration therefore includes what a caller of the host-array API
// pays: copying inputs and params to the GPU and results back.
// `cellc-gpu-resident`: the same with every array in GPU memory
// (Memory::Device), copied there once, as PyTorch users keep tensors.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include "CudaCell.h"
#include "cellrt/Runtime.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace cellc_bench;

namespace {

bool readFile(const std::string &path, std::string &text) {
  std::ifstream file(path);
  if (!file)
    return false;
  std::stringstream buffer;
  buffer << file.rdbuf();
  text = buffer.str();
  return true;
}

std::unique_ptr<Runner> makeGpuRunner(const Workload &w, std::string &why,
                                      cellrt::Memory memory) {
  const char *dir = std::getenv("CELLC_BENCH_PTX_DIR");
  std::string folder = dir ? dir : CELLC_BENCH_PTX_DIR;
  std::string plan, ptx;
  if (!readFile(folder + "/" + w.cell + ".tables", plan) ||
      !readFile(folder + "/" + w.cell + ".ptx", ptx)) {
    why = "cell-not-compiled";
    return nullptr;
  }
  cellrt::Status usable = cellrt::cuda::available();
  if (!usable.ok()) {
    why = "no-gpu";
    return nullptr;
  }
  auto loaded = cellrt::cuda::loadCell(plan, ptx);
  if (!loaded)
    fail("load " + w.cell + " on the GPU: " + loaded.error());
  return makeCellRunner(std::move(*loaded), w, memory);
}

Factory gpuRunner(cellrt::Memory memory) {
  return [memory](const Workload &w, std::string &why) {
    return makeGpuRunner(w, why, memory);
  };
}

Register reg({"cellc-gpu", gpuRunner(cellrt::Memory::Host), [](int) {},
              nullptr});
Register resident({"cellc-gpu-resident", gpuRunner(cellrt::Memory::Device),
                   [](int) {}, nullptr});

} // namespace
