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
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

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
  // After CSE, which may merge operands: gradients with one writer are
  // stored, not added to zeroed buffers.
  if (withBackward)
    cellPM.addPass(cell::createStoreSoleGradients());
}

/// Kernels of scf/arith/math to the LLVM dialect, shared by both targets.
static void addKernelLoweringPasses(PassManager &pm) {
  // exp/tanh/log as polynomials so the loops vectorise (and need no libm or
  // libdevice).
  pm.addPass(cell::createApproximateMath());
  // Upstream lowering of loops, arithmetic and functions to LLVM.
  pm.addPass(createConvertSCFToCFPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(cf::createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
}

void cellc::addLoweringToLLVMPasses(PassManager &pm) {
  // Kernels become loops over rows and elements with the uniform ABI.
  pm.addPass(cell::createLowerToLoops());
  // What the runtime runs, as IR, while the kernels are lowered.
  pm.addPass(cell::createBuildSchedule());
  addKernelLoweringPasses(pm);
  // Plans and kernel tables replace the cells.
  pm.addPass(cell::createEmitRuntimeImage());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

namespace {
/// The GPU module keeps only kernels: the plan and its schedule live on
/// the host.
struct EraseCellsPass
    : PassWrapper<EraseCellsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EraseCellsPass)
  void runOnOperation() override {
    for (Operation &op : llvm::make_early_inc_range(*getOperation().getBody()))
      if (isa<cell::CellOp, sched::ProgramOp>(op))
        op.erase();
  }
};
/// Marks the lowered kernels as GPU entry points (`.entry` in PTX); the
/// attribute is only valid on llvm.func, so this runs after func-to-llvm.
struct MarkKernelsPass
    : PassWrapper<MarkKernelsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MarkKernelsPass)
  void runOnOperation() override {
    for (auto func : getOperation().getOps<LLVM::LLVMFuncOp>())
      if (!func.isExternal())
        func->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(),
                      UnitAttr::get(&getContext()));
  }
};
} // namespace

void cellc::addLoweringToGPUPasses(PassManager &pm) {
  // The same kernels, one thread per row.
  pm.addPass(cell::createLowerToLoops(cell::LowerToLoopsOptions{/*gpu=*/true}));
  pm.addPass(std::make_unique<EraseCellsPass>());
  addKernelLoweringPasses(pm);
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(std::make_unique<MarkKernelsPass>());
}
