//===- EmitObject.cpp - LLVM dialect to optimised LLVM IR and objects -----===//

#include "codegen/Codegen.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/SubtargetFeature.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;

namespace {

/// The target machine `options` ask for: this host's CPU ("native"), a named
/// CPU, or for portable objects the x86-64 baseline, which the kernels'
/// clones extend per level with function attributes.
std::unique_ptr<llvm::TargetMachine>
createTargetMachine(const cellc::TargetOptions &options, bool portable,
                    std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string triple = llvm::sys::getDefaultTargetTriple();
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  bool native = options.cpu.empty() || options.cpu == "native";
  std::string cpu = portable  ? "x86-64"
                    : native ? llvm::sys::getHostCPUName().str()
                             : options.cpu;
  llvm::SubtargetFeatures features;
  if (native && !portable) {
    llvm::StringMap<bool> hostFeatures;
    if (llvm::sys::getHostCPUFeatures(hostFeatures))
      for (auto &feature : hostFeatures)
        features.AddFeature(feature.first(), feature.second);
  }
  llvm::TargetOptions targetOptions;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, features.getString(), targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOpt::Aggressive));
}

/// Tells LLVM that the innermost loops of cellc's kernels carry no memory
/// dependence between iterations: each iteration touches element j of its
/// arguments (Kernel.h forbids overlapping arguments), so the vectoriser can
/// skip runtime alias checks, which it gives up on for kernels with dozens
/// of pointers (backward kernels).
void annotateParallelLoops(llvm::Module &module) {
  llvm::LLVMContext &context = module.getContext();
  for (llvm::Function &function : module) {
    if (function.isDeclaration() || !function.getName().startswith("cellc_"))
      continue;
    llvm::DominatorTree dominators(function);
    llvm::LoopInfo loops(dominators);
    for (llvm::Loop *loop : loops.getLoopsInPreorder()) {
      if (!loop->isInnermost())
        continue;
      llvm::MDNode *group = llvm::MDNode::getDistinct(context, {});
      for (llvm::BasicBlock *block : loop->blocks())
        for (llvm::Instruction &instruction : *block)
          if (instruction.mayReadOrWriteMemory())
            instruction.setMetadata(llvm::LLVMContext::MD_access_group, group);
      llvm::Metadata *parallel[] = {
          llvm::MDString::get(context, "llvm.loop.parallel_accesses"), group};
      llvm::Metadata *loopId[] = {nullptr,
                                  llvm::MDNode::get(context, parallel)};
      llvm::MDNode *id = llvm::MDNode::getDistinct(context, loopId);
      id->replaceOperandWith(0, id);
      loop->setLoopID(id);
    }
  }
}

/// Translates to LLVM IR and runs the O3 pipeline for the target machine.
std::unique_ptr<llvm::Module> translateAndOptimize(
    ModuleOp module, llvm::LLVMContext &context,
    const cellc::TargetOptions &options,
    std::unique_ptr<llvm::TargetMachine> &machine) {
  registerLLVMDialectTranslation(*module.getContext());
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "cellc");
  if (!llvmModule) {
    module.emitError("translation to LLVM IR failed");
    return nullptr;
  }
  std::string error;
  bool portable = !cellc::kernelLevels(options).empty();
  machine = createTargetMachine(options, portable, error);
  if (!machine) {
    module.emitError("no target machine: ") << error;
    return nullptr;
  }
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple().getTriple());
  annotateParallelLoops(*llvmModule);
  if (portable)
    cellc::multiversionKernels(*llvmModule);
  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get())) {
    module.emitError("LLVM optimisation failed: ")
        << llvm::toString(std::move(err));
    return nullptr;
  }
  return llvmModule;
}

/// Loop strength reduction was 30-45% of an x86 object's compile time
/// (SR-NMT: 0.09 of 0.30 s per CPU level; the portable object has three)
/// and the kernels run as fast without it: their loops index every
/// argument by the element, which x86 addressing modes do directly. This
/// pass manager drops it (and so never schedules its IVUsers analysis)
/// unless the command line names --disable-lsr, which then decides. It
/// leaves LLVM's global option alone: other compiles in the process, and
/// NVPTX's here, keep it.
class CodegenPassManager : public llvm::legacy::PassManager {
public:
  explicit CodegenPassManager(const llvm::TargetMachine &machine)
      : dropStrengthReduction(machine.getTargetTriple().isX86() &&
                              !namedOnCommandLine("disable-lsr")) {}

  void add(llvm::Pass *pass) override {
    if (dropStrengthReduction &&
        pass->getPassName() == "Loop Strength Reduction") {
      delete pass;
      return;
    }
    llvm::legacy::PassManager::add(pass);
  }

private:
  static bool namedOnCommandLine(llvm::StringRef option) {
    llvm::cl::Option *registered =
        llvm::cl::getRegisteredOptions().lookup(option);
    return registered && registered->getNumOccurrences() > 0;
  }

  bool dropStrengthReduction;
};

} // namespace

LogicalResult cellc::emitLLVMIR(ModuleOp module, const TargetOptions &options,
                                llvm::raw_ostream &os) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::TargetMachine> machine;
  auto llvmModule = translateAndOptimize(module, context, options, machine);
  if (!llvmModule)
    return failure();
  llvmModule->print(os, nullptr);
  return success();
}

LogicalResult cellc::emitObjectFile(ModuleOp module,
                                    const TargetOptions &options,
                                    llvm::raw_ostream &os) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::TargetMachine> machine;
  auto llvmModule = translateAndOptimize(module, context, options, machine);
  if (!llvmModule)
    return failure();
  return cellc::emitMachineCode(module, *machine, *llvmModule,
                                llvm::CGFT_ObjectFile, os);
}

LogicalResult cellc::emitMachineCode(ModuleOp module,
                                     llvm::TargetMachine &machine,
                                     llvm::Module &llvmModule,
                                     llvm::CodeGenFileType fileType,
                                     llvm::raw_ostream &os) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream bufferStream(buffer);
  CodegenPassManager codegen(machine);
  if (machine.addPassesToEmitFile(codegen, bufferStream, nullptr, fileType)) {
    module.emitError("the target cannot emit ")
        << (fileType == llvm::CGFT_ObjectFile ? "object files" : "assembly");
    return failure();
  }
  codegen.run(llvmModule);
  os.write(buffer.data(), buffer.size());
  return success();
}
