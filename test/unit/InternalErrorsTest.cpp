//===- InternalErrorsTest.cpp - Errors after the front end are cellc's ----===//

#include "codegen/Codegen.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

/// Everything reported through `context`, as text.
struct Captured {
  explicit Captured(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diagnostic) {
          text += diagnostic.str() + "\n";
          for (Diagnostic &note : diagnostic.getNotes())
            text += "note: " + note.str() + "\n";
          return success();
        }) {}
  std::string text;
  ScopedDiagnosticHandler handler;
};

Location cellLocation(MLIRContext &context) {
  return FileLineColLoc::get(&context, "deep.cell", 6, 20);
}

TEST(InternalErrors, AVerifierErrorSaysItIsACellcBug) {
  MLIRContext context;
  Captured captured(context);
  {
    cellc::InternalErrorScope scope(context);
    InFlightDiagnostic error = emitError(cellLocation(context));
    error << "operand #1 does not dominate this use";
    error.attachNote() << "operand defined here";
  }
  EXPECT_NE(captured.text.find("internal compiler error: operand #1 does "
                               "not dominate this use"),
            std::string::npos)
      << captured.text;
  EXPECT_NE(captured.text.find("note: operand defined here"),
            std::string::npos);
  EXPECT_NE(captured.text.find("this is a cellc bug"), std::string::npos);
}

TEST(InternalErrors, WarningsAndErrorsOutsideTheScopeAreUnchanged) {
  MLIRContext context;
  Captured captured(context);
  {
    cellc::InternalErrorScope scope(context);
    emitWarning(cellLocation(context)) << "a warning";
  }
  emitError(cellLocation(context)) << "unknown name 'q'";
  EXPECT_EQ(captured.text, "a warning\nunknown name 'q'\n");
}

} // namespace
