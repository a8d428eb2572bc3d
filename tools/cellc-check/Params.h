//===- Params.h - Param values given to cellc-check -------------*- C++ -*-===//
//
// `cellc check --params FILE.npz`: the archive's float32 arrays are the
// cell's params (a module's own weights), and their shapes bind the cell's
// dimensions, so every run of the check uses exactly those values and
// sizes. Errors are returned as text naming the file and the param.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TOOLS_CELLC_CHECK_PARAMS_H
#define CELLC_TOOLS_CELLC_CHECK_PARAMS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cellrt {
struct Plan;
} // namespace cellrt

namespace cellc {
namespace ast {
struct Cell;
} // namespace ast

namespace check {

/// Every param's values and shape, and the plan dims the shapes bind.
struct GivenParams {
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::map<std::string, int64_t> dims;
};

/// Reads the archive at `path` as the params of the compiled `plan` (whose
/// AST `cell` gives the shapes as declared, for messages). `fixedDims` are
/// the --dim values the cell was compiled with. Returns "" or an error
/// starting with `path`: an array missing, extra or not float32, a shape
/// that disagrees with another param's or with --dim, or one that leaves a
/// dimension undetermined.
std::string readGivenParams(const std::string &path, const cellrt::Plan &plan,
                            const ast::Cell &cell,
                            const std::map<std::string, int64_t> &fixedDims,
                            GivenParams &given);

} // namespace check
} // namespace cellc

#endif // CELLC_TOOLS_CELLC_CHECK_PARAMS_H
