//===- InternalErrors.cpp - Errors after the front end are cellc's bugs ---===//
//
// A cell the front end accepted must compile. When a pass, a verifier or
// the lowering still reports an error, the message must not read like a
// mistake in the researcher's cell: it is re-emitted at the same location as
// an internal compiler error, with a line that says whose bug it is.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"

using namespace mlir;

cellc::InternalErrorScope::InternalErrorScope(MLIRContext &context)
    : context(context) {
  handlerId = context.getDiagEngine().registerHandler(
      [this](Diagnostic &diagnostic) { return rewrite(diagnostic); });
}

cellc::InternalErrorScope::~InternalErrorScope() {
  context.getDiagEngine().eraseHandler(handlerId);
}

LogicalResult cellc::InternalErrorScope::rewrite(Diagnostic &diagnostic) {
  // The re-emitted diagnostic (and warnings, remarks) go on to the next
  // handler unchanged.
  if (rewriting || diagnostic.getSeverity() != DiagnosticSeverity::Error)
    return failure();
  rewriting = true;
  InFlightDiagnostic internal = emitError(diagnostic.getLocation());
  internal << "internal compiler error: " << diagnostic.str();
  for (Diagnostic &note : diagnostic.getNotes())
    internal.attachNote(note.getLocation()) << note.str();
  internal.attachNote()
      << "this is a cellc bug, not a mistake in the cell: the front end "
         "accepted it, so it must compile; please report it with the .cell "
         "file";
  internal.report();
  rewriting = false;
  return success();
}
