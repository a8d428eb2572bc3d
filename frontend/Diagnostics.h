//===- Diagnostics.h - Printing the front end's diagnostics -----*- C++ -*-===//
//
// MLIR's SourceMgrDiagnosticHandler, made safe for odd files: it reports at
// most limits::kMaxErrors errors (then one "too many errors" line and
// nothing more), and it echoes a long source line only around the caret. A
// 1 MB line of stray characters would otherwise be printed once per error,
// gigabytes in all. Every tool that shows `file:line:col: error: ...` with the
// source line (cellc, the JIT, cellc-check) uses this handler.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_FRONTEND_DIAGNOSTICS_H
#define CELLC_FRONTEND_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"

namespace cellc {

class SourceDiagnosticHandler : public mlir::SourceMgrDiagnosticHandler {
public:
  /// Prints to llvm::errs().
  SourceDiagnosticHandler(llvm::SourceMgr &sourceMgr,
                          mlir::MLIRContext *context);
  /// Prints to `os`.
  SourceDiagnosticHandler(llvm::SourceMgr &sourceMgr,
                          mlir::MLIRContext *context, llvm::raw_ostream &os);

  /// Errors seen so far, including those no longer printed.
  unsigned errorCount() const { return errors; }

  /// Source lines longer than this many bytes are echoed only around the
  /// caret.
  static constexpr size_t kMaxEchoedLine = 160;

private:
  mlir::LogicalResult handle(mlir::Diagnostic &diagnostic);
  /// The text of the main buffer's line that `loc` points into, or "" when
  /// `loc` is not a line and column in the main buffer.
  llvm::StringRef mainBufferLine(mlir::Location loc) const;
  /// Prints one diagnostic (no notes) whose source line is too long to echo
  /// whole: the location, the message, a window of the line and the caret.
  void printWithWindow(mlir::FileLineColLoc loc, llvm::StringRef line,
                       const llvm::Twine &message,
                       mlir::DiagnosticSeverity severity);

  unsigned errors = 0;
};

} // namespace cellc

#endif // CELLC_FRONTEND_DIAGNOSTICS_H
