//===- CudaBackendTest.cpp - The GPU backend, checked without a GPU -------===//
//
// What can be proven here: the launcher packs exactly the parameters the
// PTX entries declare (read from cellc's own PTX), the launch geometry, and
// that asking for the GPU where there is none fails with a clear message.
//
//===----------------------------------------------------------------------===//

#include "CudaCell.h"
#include "KernelLaunch.h"
#include "test/unit/CellRunner.h"

#include <gtest/gtest.h>

using namespace cellrt::cuda;
using cellrt_test::readTextFile;

namespace {

void expectEntriesMatchPacking(const std::string &cell, int numKernels) {
  std::string ptx =
      readTextFile(std::string(CELLC_PTX_DIR) + "/" + cell + ".ptx");
  ASSERT_FALSE(ptx.empty()) << cell;
  std::array<size_t, 7> packed = packedArgumentSizes();
  for (int k = 0; k < numKernels; ++k) {
    std::string entry = "cellc_" + cell + "_k" + std::to_string(k);
    std::vector<std::string> types = entryParameterTypes(ptx, entry);
    ASSERT_EQ(types.size(), packed.size()) << entry;
    for (size_t i = 0; i < types.size(); ++i)
      EXPECT_EQ(ptxTypeSize(types[i]), packed[i])
          << entry << " parameter " << i << " is " << types[i];
  }
  EXPECT_TRUE(entryParameterTypes(ptx, "cellc_" + cell + "_k" +
                                           std::to_string(numKernels))
                  .empty())
      << "more kernels than expected";
}
} // namespace

TEST(CudaLaunch, PackingMatchesGruEntries) {
  expectEntriesMatchPacking("gru", 4);
}

TEST(CudaLaunch, PackingMatchesSrnmtEntries) {
  // SR-NMT has scan and scratch-using kernels: same signature. Its two:
  // the scan kernel (inference and training) and its backward.
  expectEntriesMatchPacking("srnmt", 2);
}

TEST(CudaLaunch, ArgumentsPointAtTheCallInOrder) {
  KernelCall call;
  call.rowBegin = 1;
  call.rowEnd = 2;
  call.step = 3;
  call.lengths = 4;
  call.dims = 5;
  call.pointers = 6;
  call.strides = 7;
  std::array<void *, 7> args = packKernelArguments(call);
  EXPECT_EQ(*static_cast<int64_t *>(args[0]), 1);
  EXPECT_EQ(*static_cast<int64_t *>(args[1]), 2);
  EXPECT_EQ(*static_cast<int64_t *>(args[2]), 3);
  for (int i = 3; i < 7; ++i)
    EXPECT_EQ(*static_cast<uint64_t *>(args[i]), uint64_t(i + 1));
}

TEST(CudaLaunch, OneBlockPerRowOfWholeWarps) {
  for (int64_t rows : {1, 10, 31, 64, 100, 640, 3200, 100000})
    for (int64_t sms : {1, 108, 132}) {
      LaunchShape shape = launchShape(rows, sms);
      EXPECT_EQ(shape.blocks, rows) << rows << " on " << sms;
      EXPECT_EQ(shape.lanes % 32, 0);
      EXPECT_GE(shape.lanes, 64);
      EXPECT_LE(shape.lanes, 256);
    }
  // A step over B = 64 rows on an H100 (132 SMs): 8 warps per row.
  EXPECT_EQ(launchShape(64, 132).lanes, 256);
  // A pre kernel over T*B = 50*64 rows: 2-warp blocks, 24 per SM.
  EXPECT_EQ(launchShape(3200, 132).lanes, 64);
  EXPECT_EQ(launchShape(0, 108).blocks, 0);
}

TEST(CudaBackend, WithoutADriverSaysUseTheCpu) {
  std::string plan = readTextFile(std::string(CELLC_PTX_DIR) + "/gru.tables");
  std::string ptx = readTextFile(std::string(CELLC_PTX_DIR) + "/gru.ptx");
  auto cell = loadCell(plan, ptx);
  if (cell.ok())
    GTEST_SKIP() << "this machine has a CUDA driver and a GPU";
  EXPECT_NE(cell.error().find("use --device cpu"), std::string::npos)
      << cell.error();
}
