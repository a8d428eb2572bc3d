//===- CompiledAtrTest.cpp - cellc's ATR object against LibTorch ----------===//
//
// The object and header come from `cellc cells/atr.cell` at build time, so
// this checks the whole pipeline: front end, passes, kernel lowering, plan,
// object emission and the runtime executor.
//
//===----------------------------------------------------------------------===//

#include "AtrCheck.h"
#include "atr.h"
#include "cellrt/PlanTables.h"

#include <gtest/gtest.h>

#include <string>

TEST(CompiledAtr, MatchesLibTorch) {
  cellrt_test::runAtrCheck(cellc_atr_image());
}

TEST(CompiledAtr, ExportsOneStepKernelAndItsBackward) {
  // Hoisting leaves one GEMM before the loop and one per step, and all the
  // gate math is one fused kernel; derive-backward adds its twin.
  ASSERT_EQ(cellc_atr_num_kernels, 2);
  EXPECT_EQ(std::string(cellc_atr_kernel_names[0]), "cellc_atr_k0");
  EXPECT_EQ(std::string(cellc_atr_kernel_names[1]), "cellc_atr_k1");
  EXPECT_EQ(reinterpret_cast<void *>(cellc_atr_kernels[0]),
            reinterpret_cast<void *>(&cellc_atr_k0));
  EXPECT_EQ(reinterpret_cast<void *>(cellc_atr_kernels[1]),
            reinterpret_cast<void *>(&cellc_atr_k1));
  cellrt::Expected<cellrt::Plan> tables =
      cellrt::decodePlanImage(cellc_atr_plan);
  ASSERT_TRUE(tables.ok()) << tables.error();
  std::string plan = cellrt::printPlan(*tables);
  EXPECT_NE(plan.find("pre gemm"), std::string::npos) << plan;
  EXPECT_NE(plan.find("step kernel 0"), std::string::npos) << plan;
  EXPECT_NE(plan.find("bstep kernel 1"), std::string::npos) << plan;
}

TEST(CompiledAtr, GradientsMatchLibTorch) {
  cellrt_test::runAtrGradientCheck(cellc_atr_image());
}
