//===- LowerToLoops.cpp - cell.fused regions to kernel functions ----------===//
//
// Every cell.fused becomes a func.func kernel with the uniform ABI of
// cellrt/Kernel.h (KernelEmitter.cpp writes its body); the fused op keeps
// its kernel's index for the plan. Also the shared facts about kernels:
// the dims array order, scratch slots, kernel counts and names.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "codegen/KernelEmitter.h"
#include "cellrt/DimExpr.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <set>

namespace mlir::cell {
#define GEN_PASS_DEF_LOWERTOLOOPS
#include "codegen/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {

/// The uniform kernel signature of cellrt/Kernel.h.
func::FuncOp createKernelFunction(ModuleOp module, StringRef name) {
  MLIRContext *context = module.getContext();
  OpBuilder builder(context);
  builder.setInsertionPointToEnd(module.getBody());
  Type i64 = builder.getI64Type();
  auto ptrTo = [](Type t) { return LLVM::LLVMPointerType::get(t); };
  Type f32Ptr = ptrTo(builder.getF32Type());
  auto type = builder.getFunctionType(
      {i64, i64, i64, ptrTo(builder.getI32Type()), ptrTo(i64), ptrTo(f32Ptr),
       ptrTo(i64)},
      {});
  auto func = builder.create<func::FuncOp>(module.getLoc(), name, type);
  func.addEntryBlock();
  return func;
}

struct LowerToLoopsPass : cell::impl::LowerToLoopsBase<LowerToLoopsPass> {
  using LowerToLoopsBase::LowerToLoopsBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (CellOp cell : llvm::to_vector(module.getOps<CellOp>())) {
      std::vector<std::string> dims = cellc::collectDims(cell);
      int64_t index = 0;
      auto addKernel = [&](FusedOp fused, bool scan) {
        func::FuncOp func = createKernelFunction(
            module, cellc::kernelSymbol(cell.getSymName(), index));
        cellc::emitKernel(fused, func, dims, cell.getNumStates(), scan, gpu);
        return index++;
      };
      // A scan kernel runs the whole sequence in both modes (training's
      // records the state history), so its op needs no step form.
      cell.walk([&](FusedOp fused) {
        fused.setKernel(addKernel(fused, fused.getScan()));
      });
    }
  }
};

} // namespace

int64_t cellc::countKernels(CellOp cell) {
  int64_t count = 0;
  cell.walk([&](FusedOp) { ++count; });
  return count;
}

std::string cellc::kernelSymbol(StringRef cellName, int64_t index) {
  return ("cellc_" + cellName + "_k" + std::to_string(index)).str();
}
