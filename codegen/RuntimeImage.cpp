//===- RuntimeImage.cpp - Plans and kernel tables as object data ----------===//
//
// An object compiled from a cell is self-describing: next to its kernels it
// exports the plan's tables and a table of kernel pointers, so the runtime can
// execute any cell from the object alone (cellrt/Kernel.h).
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "schedule/Schedule.h"

#include "cellrt/PlanTables.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::cell {
#define GEN_PASS_DEF_EMITRUNTIMEIMAGE
#include "codegen/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;
using namespace mlir::cell;

namespace {

struct ImageBuilder {
  ImageBuilder(ModuleOp module)
      : module(module), builder(module.getContext()), loc(module.getLoc()),
        i8Ptr(LLVM::LLVMPointerType::get(builder.getI8Type())) {
    builder.setInsertionPointToEnd(module.getBody());
  }

  /// A NUL-terminated constant string; internal unless `exportedName`.
  LLVM::GlobalOp addString(StringRef name, StringRef text,
                           LLVM::Linkage linkage) {
    std::string data = text.str();
    data.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(builder.getI8Type(), data.size());
    return builder.create<LLVM::GlobalOp>(loc, type, /*isConstant=*/true,
                                          linkage, name,
                                          builder.getStringAttr(data));
  }

  /// A constant array of i8* filled by `elements` in the initializer.
  void addPointerTable(StringRef name, int64_t size,
                       function_ref<Value(OpBuilder &, int64_t)> element) {
    auto type = LLVM::LLVMArrayType::get(i8Ptr, size);
    auto global = builder.create<LLVM::GlobalOp>(
        loc, type, /*isConstant=*/true, LLVM::Linkage::External, name,
        Attribute());
    OpBuilder::InsertionGuard guard(builder);
    builder.createBlock(&global.getInitializerRegion());
    Value table = builder.create<LLVM::UndefOp>(loc, type);
    for (int64_t i = 0; i < size; ++i)
      table = builder.create<LLVM::InsertValueOp>(loc, table,
                                                  element(builder, i), i);
    builder.create<LLVM::ReturnOp>(loc, table);
  }

  Value bitcastToI8Ptr(OpBuilder &b, Value pointer) {
    return b.create<LLVM::BitcastOp>(loc, i8Ptr, pointer);
  }

  /// The cell's globals, the plan being `program`'s tables.
  LogicalResult addCell(CellOp cell, sched::ProgramOp program) {
    std::string prefix = ("cellc_" + cell.getSymName()).str();
    FailureOr<cellrt::Plan> plan = sched::checkedPlan(program);
    if (failed(plan))
      return failure();
    addString(prefix + "_plan", cellrt::encodePlan(*plan),
              LLVM::Linkage::External);
    int64_t numKernels = cellc::countKernels(cell);

    SmallVector<LLVM::GlobalOp> names;
    for (int64_t i = 0; i < numKernels; ++i)
      names.push_back(addString(prefix + "_kernel_name" + std::to_string(i),
                                cellc::kernelSymbol(cell.getSymName(), i),
                                LLVM::Linkage::Private));
    addPointerTable(prefix + "_kernels", numKernels,
                    [&](OpBuilder &b, int64_t i) {
                      auto kernel = module.lookupSymbol<LLVM::LLVMFuncOp>(
                          cellc::kernelSymbol(cell.getSymName(), i));
                      return bitcastToI8Ptr(
                          b, b.create<LLVM::AddressOfOp>(loc, kernel));
                    });
    addPointerTable(prefix + "_kernel_names", numKernels,
                    [&](OpBuilder &b, int64_t i) {
                      return bitcastToI8Ptr(
                          b, b.create<LLVM::AddressOfOp>(loc, names[i]));
                    });
    builder.create<LLVM::GlobalOp>(
        loc, builder.getI64Type(), /*isConstant=*/true,
        LLVM::Linkage::External, prefix + "_num_kernels",
        builder.getI64IntegerAttr(numKernels));
    return success();
  }

  ModuleOp module;
  OpBuilder builder;
  Location loc;
  Type i8Ptr;
};

struct EmitRuntimeImagePass
    : cell::impl::EmitRuntimeImageBase<EmitRuntimeImagePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringMap<sched::ProgramOp> programs;
    for (auto program : module.getOps<sched::ProgramOp>())
      programs[program.getCell()] = program;
    ImageBuilder image(module);
    for (CellOp cell : llvm::to_vector(module.getOps<CellOp>())) {
      sched::ProgramOp program = programs.lookup(cell.getSymName());
      if (!program) {
        OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
        FailureOr<sched::ProgramOp> built = cellc::buildSchedule(cell, builder);
        if (failed(built))
          return signalPassFailure();
        program = *built;
      }
      if (failed(image.addCell(cell, program)))
        return signalPassFailure();
      programs.erase(cell.getSymName());
      program.erase();
      cell.erase();
    }
    for (auto &[name, program] : programs) {
      program.emitError() << "the schedule of cell '" << name
                          << "' has no cell in the module";
      return signalPassFailure();
    }
  }
};

} // namespace
