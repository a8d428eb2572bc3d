//===- PlanTablesTest.cpp - The plan's binary tables ----------------------===//

#include "cellrt/PlanTables.h"
#include "test/support/AtrTrainingPlan.h"
#include "test/support/PlanText.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace cellrt;

namespace {

/// Every kind of declaration and operation: initialisers, bf16, probes,
/// written inputs and buffers, scratch, stacked weights with offsets, every
/// phase and both gradient operations.
const char *const everythingPlan =
    "cellc-plan 1\n"
    "cell every\n"
    "precision bf16\n"
    "dims H I\n"
    "input x I written\n"
    "state h H\n"
    "state c H\n"
    "param A H I init uniform 0.05\n"
    "param B H I init fan_in\n"
    "param U H H init orthogonal\n"
    "param b H init constant 1\n"
    "output H\n"
    "probe h' H\n"
    "buffer seq ab 2*H\n"
    "buffer step q 2*H+1\n"
    "buffer seq dab 2*H written\n"
    "buffer step dq H\n"
    "weight W0 A B\n"
    "weight W1 U\n"
    "pre gemm seq:ab W0 input:x\n"
    "step gemm step:q+H W1 state:h\n"
    "step kernel 0 seq:ab seq:ab+H param:b step:q+H state:h next:h state:c "
    "next:c out\n"
    "scan kernel 2 seq:ab param:b state:h next:h state:c next:c out\n"
    "bstep kernel 1 dnext:h dout dstate:h seq:dab seq:dab+H step:dq dnext:c "
    "dstate:c\n"
    "bstep gemm dstate:h W1 step:dq\n"
    "bpre gemm dinput:x W0 seq:dab\n"
    "wgrad W0 seq:dab input:x\n"
    "wgrad W1 step:dq state:h\n"
    "pgrad b seq:dab\n"
    "scratch 0 H 2*H+I\n"
    "scratch 1 H\n";

Plan readOrDie(const char *text) {
  Expected<Plan> plan = cellc_test::readPlanText(text);
  EXPECT_TRUE(plan.ok()) << plan.error();
  return plan.ok() ? *plan : Plan();
}

} // namespace

TEST(PlanTablesTest, DecodeGivesBackWhatWasEncoded) {
  for (const char *text : {everythingPlan, cellc_test::atrTrainingPlan}) {
    Plan plan = readOrDie(text);
    std::string tables = encodePlan(plan);
    EXPECT_EQ(planTablesSize(tables.data()), tables.size());
    Expected<Plan> decoded = decodePlan(tables);
    ASSERT_TRUE(decoded.ok()) << decoded.error();
    EXPECT_EQ(printPlan(*decoded), text);
    EXPECT_EQ(encodePlan(*decoded), tables);
  }
}

// References travel as indices: each name is written once, in its
// declaration (a param's name also once more in no weight).
TEST(PlanTablesTest, NamesTravelOnlyInTheirDeclarations) {
  std::string tables = encodePlan(readOrDie(everythingPlan));
  for (const char *name : {"dab", "every"}) {
    size_t first = tables.find(name);
    ASSERT_NE(first, std::string::npos) << name;
    EXPECT_EQ(tables.find(name, first + 1), std::string::npos) << name;
  }
}

TEST(PlanTablesTest, EveryTruncationIsAnError) {
  std::string tables = encodePlan(readOrDie(everythingPlan));
  for (size_t size = 0; size < tables.size(); ++size) {
    std::string cut = tables.substr(0, size);
    // The header's size stays the whole tables': both checks must hold.
    EXPECT_FALSE(decodePlan(cut).ok()) << size;
    if (size >= kPlanTablesHeaderSize) {
      uint64_t claimed = size;
      std::memcpy(&cut[16], &claimed, sizeof claimed);
      EXPECT_FALSE(decodePlan(cut).ok()) << size;
    }
  }
  Expected<Plan> longer = decodePlan(tables + "x");
  ASSERT_FALSE(longer.ok());
  EXPECT_NE(longer.error().find("the header says"), std::string::npos)
      << longer.error();
}

// A damaged byte anywhere gives an error or a plan that passes every rule;
// never a crash or an out-of-range index (run under the sanitizers in the
// fuzz build too).
TEST(PlanTablesTest, EveryDamagedByteIsAnErrorOrAValidPlan) {
  std::string tables = encodePlan(readOrDie(everythingPlan));
  int refused = 0;
  for (size_t i = kPlanTablesHeaderSize; i < tables.size(); ++i)
    for (unsigned char value : {0x00, 0x01, 0x7f, 0xff}) {
      std::string damaged = tables;
      damaged[i] = static_cast<char>(value);
      Expected<Plan> plan = decodePlan(damaged);
      if (!plan.ok()) {
        ++refused;
        EXPECT_EQ(plan.error().rfind("plan", 0), 0u) << plan.error();
        continue;
      }
      EXPECT_TRUE(validatePlan(*plan).ok()) << i;
    }
  EXPECT_GT(refused, 0);
}

TEST(PlanTablesTest, HeaderErrorsSayWhatToDo) {
  std::string tables = encodePlan(readOrDie(cellc_test::atrTrainingPlan));
  std::string newer = tables;
  uint32_t version = kPlanTablesVersion + 1;
  std::memcpy(&newer[8], &version, sizeof version);
  EXPECT_EQ(decodePlan(newer).error(),
            "plan tables: version 2, but this runtime reads version 1: "
            "recompile the cell with the cellc of this runtime");
  EXPECT_EQ(decodePlan("cellc-plan 1\n").error(),
            "plan tables: no header (they must start with cellc's plan "
            "magic)");
  EXPECT_EQ(decodePlanImage("cellc-plan 1\ncell atr\n").error(),
            "the object carries its plan as text, from a cellc older than "
            "this runtime: recompile the cell with this cellc");
  EXPECT_EQ(decodePlanImage("").error(),
            "the object's plan does not start with cellc's plan magic: "
            "recompile the cell with this cellc");
  EXPECT_TRUE(decodePlanImage(tables.data()).ok());
}

// The tables hold what the text cannot check: a reference whose index is
// outside its table.
TEST(PlanTablesTest, IndicesOutsideTheirTableAreErrors) {
  Plan plan = readOrDie(cellc_test::atrTrainingPlan);
  std::string tables = encodePlan(plan);
  // The last operation is `wgrad W0 seq:dv0 input:x`; its last operand's
  // index (input 0) sits before its column (a constant and two
  // coefficients), then the count of scratch lists (0).
  size_t scratchCount = 4, column = 3 * 8;
  size_t index = tables.size() - scratchCount - column - 4;
  int32_t inputIndex;
  std::memcpy(&inputIndex, &tables[index], sizeof inputIndex);
  ASSERT_EQ(inputIndex, 0);
  int32_t outside = 7;
  std::memcpy(&tables[index], &outside, sizeof outside);
  Expected<Plan> decoded = decodePlan(tables);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("input index 7 is outside its table of 1"),
            std::string::npos)
      << decoded.error();
}

// The rules are validatePlan's, on tables as on text: a plan built in
// memory that breaks one is refused with the operation's text.
TEST(PlanTablesTest, ValidatePlanNamesTheOperation) {
  Plan plan = readOrDie(cellc_test::atrTrainingPlan);
  plan.operations[1].operands[0].name = "nothing";
  for (Operation &op : plan.operations)
    op.line = 0;
  Status status = validatePlan(plan);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message().rfind(
                "plan operation 'step gemm step:nothing W1 state:h': ", 0),
            0u)
      << status.message();
  EXPECT_NE(status.message().find("unknown"), std::string::npos)
      << status.message();
}
