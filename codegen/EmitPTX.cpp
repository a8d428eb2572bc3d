//===- EmitPTX.cpp - LLVM dialect to PTX through NVPTX --------------------===//
//
// The GPU kernels are the CPU kernels' row bodies behind a thread index
// (lower-to-loops{gpu=true}); here they become PTX for a CUDA driver to load
// with cuModuleLoadData. Transcendental functions are already polynomials,
// so libdevice is linked only if something still calls into it.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;

namespace {

constexpr const char *kLibdevicePath =
    "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";

/// Links libdevice's definitions of what the module still declares
/// (`__nv_*`), internalised so only the kernels stay visible.
LogicalResult linkLibdeviceIfNeeded(ModuleOp module, llvm::Module &llvmModule) {
  bool needed = llvm::any_of(llvmModule.functions(), [](llvm::Function &f) {
    return f.isDeclaration() && f.getName().startswith("__nv_");
  });
  if (!needed)
    return success();
  auto buffer = llvm::MemoryBuffer::getFile(kLibdevicePath);
  if (!buffer) {
    module.emitError("libdevice not found at ") << kLibdevicePath;
    return failure();
  }
  auto libdevice =
      llvm::parseBitcodeFile(buffer.get()->getMemBufferRef(),
                             llvmModule.getContext());
  if (!libdevice) {
    module.emitError("cannot read libdevice: ")
        << llvm::toString(libdevice.takeError());
    return failure();
  }
  (*libdevice)->setTargetTriple(llvmModule.getTargetTriple());
  (*libdevice)->setDataLayout(llvmModule.getDataLayout());
  if (llvm::Linker::linkModules(
          llvmModule, std::move(*libdevice),
          llvm::Linker::Flags::LinkOnlyNeeded,
          [](llvm::Module &linked, const llvm::StringSet<> &kept) {
            for (llvm::Function &f : linked.functions())
              if (!f.isDeclaration() && !kept.contains(f.getName()) &&
                  f.getName().startswith("__nv_"))
                f.setLinkage(llvm::GlobalValue::InternalLinkage);
          })) {
    module.emitError("linking libdevice failed");
    return failure();
  }
  return success();
}

} // namespace

LogicalResult cellc::emitPTX(ModuleOp module, const GPUOptions &options,
                             llvm::raw_ostream &os) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  registerLLVMDialectTranslation(*module.getContext());
  registerNVVMDialectTranslation(*module.getContext());

  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "cellc-gpu");
  if (!llvmModule) {
    module.emitError("translation to LLVM IR failed");
    return failure();
  }
  const char *triple = "nvptx64-nvidia-cuda";
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target) {
    module.emitError("no NVPTX target: ") << error;
    return failure();
  }
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, options.arch, "+" + options.ptxVersion, llvm::TargetOptions(),
      std::nullopt, std::nullopt, llvm::CodeGenOpt::Aggressive));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  if (failed(linkLibdeviceIfNeeded(module, *llvmModule)))
    return failure();
  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get())) {
    module.emitError("LLVM optimisation failed: ")
        << llvm::toString(std::move(err));
    return failure();
  }
  return emitMachineCode(module, *machine, *llvmModule,
                         llvm::CGFT_AssemblyFile, os);
}
