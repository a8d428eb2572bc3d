//===- SeedCells.h - The cells of cells/ by name ----------------*- C++ -*-===//
//
// Tests that run every seed cell list them from the folder, so a new cell
// is tested without being named here. Needs CELLC_SOURCE_DIR.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_SUPPORT_SEEDCELLS_H
#define CELLC_TEST_SUPPORT_SEEDCELLS_H

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace cellc_test {

/// The names (without .cell) of the cells in cells/, sorted.
inline std::vector<std::string> seedCellNames() {
  std::vector<std::string> names;
  for (const auto &entry :
       std::filesystem::directory_iterator(CELLC_SOURCE_DIR "/cells"))
    if (entry.path().extension() == ".cell")
      names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace cellc_test

#endif
