//===- CudaGpuTest.cpp - Every cell on a real GPU against the CPU ---------===//
//
// The GPU backend end to end: cellc's plan and PTX for every cell in cells/
// (made at build time), loaded with cellrt::cuda::loadCell on GPU 0, run
// forward (both directions, ragged lengths), training forward and backward,
// and one decoding step (beam-reordered states, with and without packed
// weights), and compared with the same cell's CPU objects on the same
// arguments. At
// the small sizes of the other device tests and at a translation-sized
// problem (H = 512, B = 64, T = 50), where cuBLAS's blocked sums differ most
// from oneDNN's.
//
// Skipped where no CUDA driver or GPU is found (CI has none). On a GPU
// machine: CELLC_PTX_DIR names the folder of <cell>.tables and <cell>.ptx
// when the build folder is not where it was built.
//
//===----------------------------------------------------------------------===//

#include "CudaCell.h"
#include "test/unit/CellRunner.h"

#include "atr.h"
#include "deeptrans.h"
#include "gru.h"
#include "lau.h"
#include "lstm.h"
#include "ran.h"
#include "rnn.h"
#include "srnmt.h"
#include "sru.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace cellrt;
using namespace cellrt_test;

namespace {

std::string ptxDir() {
  const char *dir = std::getenv("CELLC_PTX_DIR");
  return dir ? dir : CELLC_PTX_DIR;
}

/// Largest difference relative to 1 + |expected| over every array of two
/// calls, with where it is.
struct Difference {
  double worst = 0;
  size_t array = 0, element = 0;
};

Difference compare(const Results &actual, const Results &expected) {
  Difference d;
  EXPECT_EQ(actual.arrays.size(), expected.arrays.size());
  for (size_t i = 0; i < std::min(actual.arrays.size(), expected.arrays.size());
       ++i) {
    EXPECT_EQ(actual.arrays[i].size(), expected.arrays[i].size());
    for (size_t j = 0;
         j < std::min(actual.arrays[i].size(), expected.arrays[i].size());
         ++j) {
      double e = expected.arrays[i][j], a = actual.arrays[i][j];
      double relative = std::fabs(a - e) / (1 + std::fabs(e));
      if (!(relative <= d.worst)) { // NaN counts as the worst
        d = {std::isnan(relative) ? INFINITY : relative, i, j};
      }
    }
  }
  return d;
}

/// GPU against CPU for one cell at one shape, every mode. `tolerance`
/// bounds |gpu - cpu| / (1 + |cpu|): both compute in float32, with the
/// same kernel bodies (one kernel IR) but sums in other orders (cuBLAS vs
/// oneDNN, and NVPTX contracts a*b+c into fma where the CPU may not).
void expectGpuMatchesCpu(const char *name, cellrt_image image,
                         const ProblemShape &shape, double tolerance) {
  Status usable = cuda::available();
  if (!usable.ok())
    GTEST_SKIP() << usable.message();
  std::string plan = readTextFile(ptxDir() + "/" + name + ".tables");
  std::string ptx = readTextFile(ptxDir() + "/" + name + ".ptx");
  ASSERT_FALSE(plan.empty() || ptx.empty())
      << "no " << name << ".tables/.ptx in " << ptxDir();
  Expected<Cell> onCpu = Cell::load(image);
  ASSERT_TRUE(onCpu.ok()) << onCpu.error();
  Expected<Cell> onGpu = cuda::loadCell(plan, ptx);
  ASSERT_TRUE(onGpu.ok()) << onGpu.error();
  Problem problem(onCpu->getPlan(), 11, shape);
  for (bool reverse : {false, true})
    for (bool train : {false, true}) {
      if (train && !onCpu->hasBackward())
        continue;
      std::string mode = std::string(reverse ? "reverse" : "forward") +
                         (train ? "+backward" : "");
      SCOPED_TRACE(mode);
      Results expected = run(*onCpu, problem, reverse, train);
      // Twice with host arrays (the second call reuses the device's memory
      // and the tape), then with the arrays in GPU memory (Memory::Device).
      for (int call = 0; call < 3; ++call) {
        Memory memory = call < 2 ? Memory::Host : Memory::Device;
        Difference d = compare(
            run(*onGpu, problem, reverse, train, nullptr, nullptr, memory),
            expected);
        EXPECT_LE(d.worst, tolerance) << "array " << d.array << " element "
                                      << d.element << " call " << call;
        if (call != 1)
          std::printf("GPU-VS-CPU cell=%s T=%lld B=%lld dim0=%lld mode=%s "
                      "arrays=%s max_rel_diff=%.3g\n",
                      name, (long long)shape.T, (long long)shape.B,
                      (long long)shape.firstDim, mode.c_str(),
                      call < 2 ? "host" : "device", d.worst);
      }
    }
}

void expectGpuStepMatchesCpu(const char *name, cellrt_image image) {
  Status usable = cuda::available();
  if (!usable.ok())
    GTEST_SKIP() << usable.message();
  std::string plan = readTextFile(ptxDir() + "/" + name + ".tables");
  std::string ptx = readTextFile(ptxDir() + "/" + name + ".ptx");
  Expected<Cell> onCpu = Cell::load(image);
  ASSERT_TRUE(onCpu.ok()) << onCpu.error();
  Expected<Cell> onGpu = cuda::loadCell(plan, ptx);
  ASSERT_TRUE(onGpu.ok()) << onGpu.error();
  Problem problem(onCpu->getPlan(), 5);
  Expected<PackedWeights> cpuPacked = onCpu->packWeights(problem.paramArrays());
  Expected<PackedWeights> gpuPacked = onGpu->packWeights(problem.paramArrays());
  ASSERT_TRUE(cpuPacked.ok() && gpuPacked.ok());
  ASSERT_NE(gpuPacked->onDevice(), nullptr);
  for (Memory memory : {Memory::Host, Memory::Device})
    for (bool packed : {false, true}) {
      SCOPED_TRACE(packed ? "packed weights" : "weights stacked per step");
      const char *arrays = memory == Memory::Host ? "host" : "device";
      SCOPED_TRACE(arrays);
      Difference d = compare(
          runStep(*onGpu, problem, packed ? &*gpuPacked : nullptr, memory),
          runStep(*onCpu, problem, packed ? &*cpuPacked : nullptr));
      EXPECT_LE(d.worst, 2e-6)
          << "array " << d.array << " element " << d.element;
      std::printf("GPU-VS-CPU cell=%s step packed=%d arrays=%s "
                  "max_rel_diff=%.3g\n",
                  name, int(packed), arrays, d.worst);
    }
}

ProblemShape translationShape() {
  ProblemShape shape;
  shape.T = 50;
  shape.B = 64;
  shape.firstDim = 512;
  shape.paramScale = 1 / std::sqrt(512.0f);
  shape.lengths.assign(shape.B, 50);
  for (int b = 0; b < shape.B; b += 3)
    shape.lengths[b] = 1 + (b * 17) % 50; // ragged rows throughout
  return shape;
}

} // namespace

// Small sizes: float32 sums of a few terms, so the bar is tight.
#define GPU_TEST(Name, name)                                                   \
  TEST(CudaGpu, Name) {                                                        \
    expectGpuMatchesCpu(#name, cellc_##name##_image(), {}, 2e-6);              \
  }                                                                            \
  TEST(CudaGpu, Name##AtTranslationSize) {                                     \
    expectGpuMatchesCpu(#name, cellc_##name##_image(), translationShape(),     \
                        1e-4);                                                 \
  }                                                                            \
  TEST(CudaGpu, Name##Step) {                                                  \
    expectGpuStepMatchesCpu(#name, cellc_##name##_image());                    \
  }

GPU_TEST(Atr, atr)
GPU_TEST(Gru, gru)
GPU_TEST(Lstm, lstm)
GPU_TEST(Ran, ran)
GPU_TEST(Lau, lau)
GPU_TEST(Sru, sru)
GPU_TEST(Srnmt, srnmt)
GPU_TEST(Rnn, rnn)
GPU_TEST(Deeptrans, deeptrans)
