//===- Pipeline.cpp - The whole compilation pipeline, in order ------------===//

#include "codegen/Codegen.h"
#include "passes/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::cell {
#define GEN_PASS_REGISTRATION
#include "codegen/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;

void cellc::registerCodegenPasses() { cell::registerCellCodegenPasses(); }

void cellc::addCellOptimizationPasses(PassManager &pm, bool withBackward,
                                      bool saveActivations) {
  OpPassManager &cellPM = pm.nest<cell::CellOp>();
  // Input-only work runs once over all T*B rows, before the recurrence.
  cellPM.addPass(cell::createHoistInputProjections());
  // Products of one vector share one GEMM.
  cellPM.addPass(cell::createStackMatmuls());
  // Element-wise work between products becomes one kernel per level.
  cellPM.addPass(cell::createFuseElementwise());
  // No product reads the state: one kernel runs all steps.
  cellPM.addPass(cell::createTimeScan());
  // Each kernel gets its reverse-mode twin for training.
  if (withBackward)
    cellPM.addPass(cell::createDeriveBackward(
        cell::DeriveBackwardOptions{saveActivations}));
  // The front end and the derivation repeat sub-expressions (sigmoid(g)
  // twice, 1 - z in several gradients); kernels compute each once.
  cellPM.addPass(createCSEPass());
}

void cellc::addLoweringToLLVMPasses(PassManager &pm) {
  // Kernels become loops over rows and elements with the uniform ABI.
  pm.addPass(cell::createLowerToLoops());
  // exp/tanh/log as polynomials so the loops vectorise.
  pm.addPass(cell::createApproximateMath());
  // Upstream lowering of loops, arithmetic and functions to LLVM.
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(cf::createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  // Plans and kernel tables replace the cells.
  pm.addPass(cell::createEmitRuntimeImage());
  pm.addPass(createReconcileUnrealizedCastsPass());
}
