//===- CellsTest.cpp - Every cell of cells/ is built into the drivers ----===//
//
// `--cell NAME` takes every cell in cells/ by name: the table the build
// generates must not fall behind the folder, and each entry must load
// with its backward pass.
//
//===----------------------------------------------------------------------===//

#include "models/common/Cells.h"
#include "models/common/Data.h"

#include "test/support/SeedCells.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace {

using cellc_test::seedCellNames;

TEST(BuiltinCells, AreEveryCellOfTheCellsFolder) {
  std::vector<std::string> builtin = models::builtinCells();
  std::sort(builtin.begin(), builtin.end());
  EXPECT_EQ(builtin, seedCellNames());
  EXPECT_GE(builtin.size(), 9u);
}

TEST(BuiltinCells, EachLoadsWithItsBackwardPass) {
  for (const std::string &name : models::builtinCells()) {
    const cellrt::Cell &cell = models::loadCell(name);
    EXPECT_EQ(cell.getPlan().cellName, name);
    EXPECT_TRUE(cell.hasBackward()) << name;
  }
}

TEST(BuiltinCells, AnUnknownNameListsThem) {
  try {
    models::loadCell("gruu");
    FAIL() << "an unknown cell loaded";
  } catch (const models::DataError &error) {
    std::string message = error.what();
    EXPECT_NE(message.find("unknown cell 'gruu'"), std::string::npos);
    EXPECT_NE(message.find("lau"), std::string::npos) << message;
    EXPECT_NE(message.find("path.cell:NAME"), std::string::npos) << message;
  }
}

} // namespace
