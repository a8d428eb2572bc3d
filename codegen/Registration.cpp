//===- Registration.cpp - Dialects and passes every cellc tool needs ------===//
//
// In codegen/, not tools/: the JIT registers them too, and a library does
// not reach into the tools.
//
//===----------------------------------------------------------------------===//

#include "codegen/Registration.h"
#include "codegen/Codegen.h"
#include "ir/CellDialect.h"
#include "passes/Passes.h"
#include "schedule/BuildSchedule.h"
#include "schedule/Schedule.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

void cellc::registerAllCellDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::cell::CellDialect, mlir::sched::ScheduleDialect,
                  mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect, mlir::math::MathDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect>();
}

void cellc::registerAllCellPasses() {
  mlir::cell::registerCellPasses();
  mlir::cell::registerCellSchedulePasses();
  registerCodegenPasses();
}
