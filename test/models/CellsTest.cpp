//===- CellsTest.cpp - Every cell of cells/ is built into the drivers ----===//
//
// `--cell NAME` takes every cell in cells/ by name: the table the build
// generates must not fall behind the folder, and each entry must load
// with its backward pass.
//
//===----------------------------------------------------------------------===//

#include "models/common/Cells.h"
#include "models/common/Data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace {

std::vector<std::string> cellsInFolder() {
  std::vector<std::string> names;
  for (const auto &entry :
       std::filesystem::directory_iterator(CELLC_SOURCE_DIR "/cells"))
    if (entry.path().extension() == ".cell")
      names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(BuiltinCells, AreEveryCellOfTheCellsFolder) {
  std::vector<std::string> builtin = models::builtinCells();
  std::sort(builtin.begin(), builtin.end());
  EXPECT_EQ(builtin, cellsInFolder());
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
