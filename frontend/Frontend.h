//===- Frontend.h - .cell source to the cell dialect ------------*- C++ -*-===//
//
// The front end's whole surface: parse (ANTLR), check (names, shapes,
// states), generate the `cell` dialect. Errors are MLIR diagnostics at
// FileLineColLoc locations in the source buffer, so a SourceMgr handler shows
// `atr.cell:4:7: error: ...` with the line and a caret. No function here
// prints or exits.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_FRONTEND_FRONTEND_H
#define CELLC_FRONTEND_FRONTEND_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace cellc {
namespace ast {
struct Module;
} // namespace ast

/// What the front end accepts at most (docs/cell-language.md, "Limits").
/// They keep the parser's and the checker's recursion, the compile time of
/// a cell and the size of every array within bounds, whatever the input.
namespace limits {
/// Levels of parentheses, calls, unary '-' and chained '@' in one
/// expression: the parser recurses once per level.
constexpr unsigned kMaxNestingDepth = 100;
/// Tokens from one `cell` keyword to the next: bounds the depth of operator
/// chains (`x + x + ...`) and the size of the kernels LLVM must compile.
constexpr unsigned kMaxTokensPerCell = 2048;
/// Errors reported before the rest are left out ("too many errors").
constexpr unsigned kMaxErrors = 20;
/// The largest dimension: elements in one vector, and a declared
/// dimension's constant or its value when every symbol is 1.
constexpr int64_t kMaxDimension = (int64_t(1) << 31) - 1;
/// Cells that one run of cellc compiles through LLVM (an object, LLVM IR,
/// PTX) unless `--max-cells` says otherwise: each cell's kernels cost LLVM
/// 0.1-0.5 s at three instruction-set levels, and nothing else in a run
/// grows with the file (300 small cells: 45 s, of which 0.3 s before LLVM).
constexpr unsigned kMaxCompiledCells = 16;
} // namespace limits

/// Owns a parsed file; opaque outside the front end.
struct ParsedFile {
  ParsedFile();
  ~ParsedFile();
  std::unique_ptr<ast::Module> module;
};

/// Parses the main buffer of `sourceMgr`. Reports every syntax error it
/// finds; returns nullptr if there was any.
std::unique_ptr<ParsedFile> parseCellFile(llvm::SourceMgr &sourceMgr,
                                          mlir::MLIRContext &context);

/// Semantic analysis of every cell in the file: names, single assignment,
/// one update per state, `@` operands, shape unification, unused params
/// (warning). `fixedDims` binds symbolic dimensions (`--dim H=512`).
/// Reports every error; returns false if there was any.
bool checkCellFile(ParsedFile &file, mlir::MLIRContext &context,
                   const std::map<std::string, int64_t> &fixedDims);

/// Generates a module with one `cell.cell` per cell (only `cellName` if it
/// is not empty). Requires a successful checkCellFile. `probes` names values
/// of the step (`i`, `h'`, ...) that every generated cell also emits after
/// its output (`cellc --probe`); a name a cell lacks is an error at the cell.
mlir::OwningOpRef<mlir::ModuleOp>
generateCellIR(ParsedFile &file, mlir::MLIRContext &context,
               llvm::StringRef cellName = "",
               llvm::ArrayRef<std::string> probes = {});

/// Prints the AST (with locations and inferred shapes) for `-emit=ast`.
void printAST(const ParsedFile &file, llvm::raw_ostream &os);

} // namespace cellc

#endif // CELLC_FRONTEND_FRONTEND_H
