//===- Diagnostics.cpp - Printing the front end's diagnostics -------------===//

#include "frontend/Diagnostics.h"
#include "frontend/Frontend.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

using namespace cellc;

SourceDiagnosticHandler::SourceDiagnosticHandler(llvm::SourceMgr &sourceMgr,
                                                 mlir::MLIRContext *context)
    : SourceDiagnosticHandler(sourceMgr, context, llvm::errs()) {}

SourceDiagnosticHandler::SourceDiagnosticHandler(llvm::SourceMgr &sourceMgr,
                                                 mlir::MLIRContext *context,
                                                 llvm::raw_ostream &os)
    : mlir::SourceMgrDiagnosticHandler(sourceMgr, context, os) {
  // Replaces the handler the base class registered.
  setHandler(
      [this](mlir::Diagnostic &diagnostic) { return handle(diagnostic); });
}

mlir::LogicalResult
SourceDiagnosticHandler::handle(mlir::Diagnostic &diagnostic) {
  if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error)
    ++errors;
  // Past the limit nothing more is printed: one line says so, at the first
  // error that is left out.
  if (errors > limits::kMaxErrors) {
    if (errors == limits::kMaxErrors + 1 &&
        diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error)
      emitDiagnostic(diagnostic.getLocation(),
                     "too many errors; only the first " +
                         llvm::Twine(limits::kMaxErrors) + " are shown",
                     mlir::DiagnosticSeverity::Error,
                     /*displaySourceLine=*/false);
    return mlir::success();
  }

  bool longLine =
      mainBufferLine(diagnostic.getLocation()).size() > kMaxEchoedLine;
  for (mlir::Diagnostic &note : diagnostic.getNotes())
    longLine |= mainBufferLine(note.getLocation()).size() > kMaxEchoedLine;
  if (!longLine) {
    emitDiagnostic(diagnostic);
    return mlir::success();
  }
  auto print = [&](mlir::Diagnostic &part) {
    llvm::StringRef line = mainBufferLine(part.getLocation());
    auto loc = part.getLocation().dyn_cast<mlir::FileLineColLoc>();
    if (line.size() > kMaxEchoedLine && loc)
      printWithWindow(loc, line, part.str(), part.getSeverity());
    else
      emitDiagnostic(part.getLocation(), part.str(), part.getSeverity());
  };
  print(diagnostic);
  for (mlir::Diagnostic &note : diagnostic.getNotes())
    print(note);
  return mlir::success();
}

llvm::StringRef
SourceDiagnosticHandler::mainBufferLine(mlir::Location loc) const {
  auto fileLoc = loc.dyn_cast<mlir::FileLineColLoc>();
  if (!fileLoc || mgr.getNumBuffers() == 0 || fileLoc.getLine() == 0)
    return "";
  unsigned mainID = mgr.getMainFileID();
  const llvm::MemoryBuffer *buffer = mgr.getMemoryBuffer(mainID);
  if (buffer->getBufferIdentifier() != fileLoc.getFilename().getValue())
    return "";
  llvm::SMLoc start = mgr.FindLocForLineAndColumn(mainID, fileLoc.getLine(), 1);
  if (!start.isValid())
    return "";
  llvm::StringRef rest(start.getPointer(),
                       buffer->getBufferEnd() - start.getPointer());
  return rest.take_until([](char c) { return c == '\n' || c == '\r'; });
}

/// The part of `line` around byte `caret` (0-based) that is echoed, as
/// [begin, end): about half the width on each side, never starting inside
/// a UTF-8 sequence.
static std::pair<size_t, size_t> windowAround(llvm::StringRef line,
                                              size_t caret, size_t width) {
  size_t begin = caret > width / 2 ? caret - width / 2 : 0;
  size_t end = std::min(line.size(), begin + width);
  auto isContinuation = [&](size_t i) {
    return i < line.size() &&
           (static_cast<unsigned char>(line[i]) & 0xC0) == 0x80;
  };
  while (begin > 0 && isContinuation(begin))
    --begin;
  while (isContinuation(end))
    ++end;
  return {begin, end};
}

void SourceDiagnosticHandler::printWithWindow(
    mlir::FileLineColLoc loc, llvm::StringRef line, const llvm::Twine &message,
    mlir::DiagnosticSeverity severity) {
  size_t caret =
      std::min<size_t>(loc.getColumn() ? loc.getColumn() - 1 : 0, line.size());
  auto [begin, end] = windowAround(line, caret, kMaxEchoedLine / 2);
  std::string window;
  if (begin > 0)
    window += "...";
  size_t caretInWindow = window.size() + (caret - begin);
  window += line.slice(begin, end).str();
  if (end < line.size())
    window += "...";

  llvm::SourceMgr::DiagKind kind = llvm::SourceMgr::DK_Error;
  if (severity == mlir::DiagnosticSeverity::Warning)
    kind = llvm::SourceMgr::DK_Warning;
  else if (severity == mlir::DiagnosticSeverity::Note)
    kind = llvm::SourceMgr::DK_Note;
  else if (severity == mlir::DiagnosticSeverity::Remark)
    kind = llvm::SourceMgr::DK_Remark;
  {
    // The location as the base class prints it; SMDiagnostic would print
    // the column within the window.
    llvm::WithColor bold(os, llvm::raw_ostream::SAVEDCOLOR, /*Bold=*/true);
    os << loc.getFilename().getValue() << ':' << loc.getLine() << ':'
       << loc.getColumn() << ": ";
  }
  llvm::SMDiagnostic diagnostic(mgr, llvm::SMLoc(), /*FN=*/"", loc.getLine(),
                                static_cast<int>(caretInWindow), kind,
                                message.str(), window, {});
  diagnostic.print(nullptr, os);
}
