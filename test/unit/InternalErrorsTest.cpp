//===- InternalErrorsTest.cpp - Errors after the front end are cellc's ----===//

#include "cellrt/PlanTables.h"
#include "codegen/Codegen.h"
#include "frontend/Frontend.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/SourceMgr.h"

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

/// GRU through the front end, derive-backward and lower-to-loops: the cell
/// the schedule builder sees in `cellc -emit=plan`.
OwningOpRef<ModuleOp> loweredGru(MLIRContext &context) {
  context.getOrLoadDialect<cell::CellDialect>();
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(R"(
cell gru(x: [I]) {
  state h: [H]
  param Wz: [H, I], Wr: [H, I], Wh: [H, I]
  param Uz: [H, H], Ur: [H, H], Uh: [H, H]
  param bz: [H], br: [H], bh: [H]
  z = sigmoid(Wz @ x + Uz @ h + bz)
  r = sigmoid(Wr @ x + Ur @ h + br)
  c = tanh(Wh @ x + Uh @ (r * h) + bh)
  h' = z * h + (1 - z) * c
}
)",
                                                                   "gru.cell"),
                               llvm::SMLoc());
  std::unique_ptr<cellc::ParsedFile> file =
      cellc::parseCellFile(sourceMgr, context);
  if (!file || !cellc::checkCellFile(*file, context, {}))
    return nullptr;
  OwningOpRef<ModuleOp> module = cellc::generateCellIR(*file, context);
  PassManager pm(&context);
  cellc::addCellOptimizationPasses(pm, /*withBackward=*/true);
  pm.addPass(cell::createLowerToLoops());
  if (!module || failed(pm.run(*module)))
    return nullptr;
  return module;
}

// The schedule's plan passes the runtime's rules, and its tables decode
// to the same plan.
TEST(PlanChecks, TheEmittedPlanDecodesFromItsTables) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module = loweredGru(context);
  ASSERT_TRUE(module);
  auto cell = *module->getOps<cell::CellOp>().begin();
  FailureOr<cellrt::Plan> emitted = cellc::emitPlan(cell);
  ASSERT_TRUE(succeeded(emitted));
  cellrt::Expected<cellrt::Plan> plan =
      cellrt::decodePlan(cellrt::encodePlan(*emitted));
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(cellrt::printPlan(*plan), cellrt::printPlan(*emitted));
  EXPECT_TRUE(plan->hasBackward());
  EXPECT_EQ(plan->cellName, "gru");
}

// A plan the runtime would refuse at load time fails at compile time, with
// the runtime's own message, as a cellc bug. A state name that is not an
// identifier stands in for a schedule builder bug.
TEST(PlanChecks, APlanTheRuntimeRefusesIsAnInternalError) {
  MLIRContext context;
  OwningOpRef<ModuleOp> module = loweredGru(context);
  ASSERT_TRUE(module);
  auto cell = *module->getOps<cell::CellOp>().begin();
  Builder builder(&context);
  cell->setAttr("state_names", builder.getStrArrayAttr({"h h"}));
  Captured captured(context);
  {
    cellc::InternalErrorScope scope(context);
    EXPECT_TRUE(failed(cellc::emitPlan(cell)));
  }
  EXPECT_NE(captured.text.find("internal compiler error: the schedule of cell "
                               "'gru' does not pass the runtime's checks: "
                               "plan: state name 'h h' is not an "
                               "identifier"),
            std::string::npos)
      << captured.text;
  EXPECT_NE(captured.text.find("this is a cellc bug"), std::string::npos);
}

} // namespace
