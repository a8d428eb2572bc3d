//===- Multiversion.cpp - One object for every x86-64 CPU -----------------===//
//
// An object compiled for the build machine's CPU stops with SIGILL on a CPU
// without its instructions (AVX-512 on this project's build host), so a
// portable object carries each kernel once per instruction-set level: the
// x86-64 baseline (SSE2), AVX2 with FMA, and AVX-512. The kernel's own name
// becomes a GNU indirect function whose resolver, run once by the dynamic
// loader, returns the best level the CPU has, read from libgcc's (or
// compiler-rt's) __cpu_model as GCC's and Clang's target_clones do. Callers
// and the image's kernel table see one function, at no cost per call.
//
// The tables cellc_<cell>_kernels_<level> name each level's kernels, so
// tests can run every level on a CPU that has them all.
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/GlobalIFunc.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"
#include "llvm/Transforms/Utils/Cloning.h"

namespace {

/// One instruction-set level: what its code may use (and the resolver
/// checks), and the CPU whose tuning it takes (the vector width the
/// vectoriser prefers, instruction costs).
struct Level {
  llvm::StringRef name;
  llvm::StringRef tuneCPU;
  llvm::SmallVector<llvm::StringRef, 8> features;
};

/// Best last: the resolver takes the last level whose features the CPU has.
/// The baseline has no attributes: it is the target machine's x86-64.
const Level &level(size_t index) {
  static const Level levels[] = {
      {"sse2", "generic", {}},
      {"avx2", "haswell", {"avx2", "fma"}},
      {"avx512",
       "skylake-avx512",
       {"avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512cd", "avx2",
        "fma"}},
  };
  return levels[index];
}
constexpr size_t kNumLevels = 3;

std::string featureString(const Level &level) {
  std::string features;
  for (llvm::StringRef feature : level.features)
    features += (features.empty() ? "+" : ",+") + feature.str();
  return features;
}

/// The kernels: external definitions named cellc_* (the image's tables and
/// plan are variables).
llvm::SmallVector<llvm::Function *> collectKernels(llvm::Module &module) {
  llvm::SmallVector<llvm::Function *> kernels;
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && function.hasExternalLinkage() &&
        function.getName().startswith("cellc_"))
      kernels.push_back(&function);
  return kernels;
}

llvm::Function *cloneForLevel(llvm::Function &kernel, const Level &level) {
  llvm::ValueToValueMapTy mapping;
  llvm::Function *clone = llvm::CloneFunction(&kernel, mapping);
  clone->setName(kernel.getName() + "." + level.name);
  clone->setLinkage(llvm::GlobalValue::InternalLinkage);
  if (!level.features.empty()) {
    clone->addFnAttr("target-features", featureString(level));
    clone->addFnAttr("tune-cpu", level.tuneCPU);
  }
  return clone;
}

/// Loads the CPU's feature bits (__cpu_model.__cpu_features[0], after
/// __cpu_indicator_init) and returns the best level's clone.
llvm::Function *emitResolver(llvm::Module &module, llvm::StringRef name,
                             llvm::ArrayRef<llvm::Function *> clones) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *i32 = llvm::Type::getInt32Ty(context);
  auto *pointer = llvm::PointerType::getUnqual(context);
  auto *resolver = llvm::Function::Create(
      llvm::FunctionType::get(pointer, /*isVarArg=*/false),
      llvm::GlobalValue::InternalLinkage, name + ".resolve", module);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "", resolver));
  builder.CreateCall(module.getOrInsertFunction(
      "__cpu_indicator_init", llvm::Type::getVoidTy(context)));
  auto *modelType = llvm::StructType::get(i32, i32, i32,
                                          llvm::ArrayType::get(i32, 1));
  llvm::Constant *model =
      module.getOrInsertGlobal("__cpu_model", modelType);
  llvm::Value *featuresAddress = builder.CreateConstInBoundsGEP2_32(
      modelType, model, 0, 3);
  llvm::Value *features =
      builder.CreateAlignedLoad(i32, featuresAddress, llvm::Align(4));
  llvm::Value *chosen = clones[0];
  for (size_t i = 1; i < kNumLevels; ++i) {
    uint64_t mask = llvm::X86::getCpuSupportsMask(level(i).features);
    // Every level's features are among the first 32 (__cpu_features[0]);
    // later ones live in __cpu_features2.
    assert(mask >> 32 == 0 && "feature outside __cpu_model");
    llvm::Constant *bits = llvm::ConstantInt::get(i32, mask);
    llvm::Value *has =
        builder.CreateICmpEQ(builder.CreateAnd(features, bits), bits);
    chosen = builder.CreateSelect(has, clones[i], chosen);
  }
  builder.CreateRet(chosen);
  return resolver;
}

/// Whether `table` is an image's kernel table: a constant array of kernels,
/// or the empty cellc_<cell>_kernels of a cell without kernels (whose
/// header declares level tables too).
bool isKernelTable(
    const llvm::GlobalVariable &table,
    const llvm::MapVector<llvm::Function *,
                          llvm::SmallVector<llvm::Function *>> &clones) {
  auto *type = llvm::dyn_cast<llvm::ArrayType>(table.getValueType());
  if (!type || !table.hasInitializer())
    return false;
  if (type->getNumElements() == 0)
    return table.getName().startswith("cellc_") &&
           table.getName().endswith("_kernels");
  for (uint64_t k = 0; k < type->getNumElements(); ++k) {
    auto *kernel = llvm::dyn_cast_or_null<llvm::Function>(
        table.getInitializer()->getAggregateElement(k));
    if (!kernel || !clones.count(kernel))
      return false;
  }
  return true;
}

/// For every table of kernels, the same table of each level's clones, named
/// <table>_<level>.
void addLevelTables(
    llvm::Module &module,
    const llvm::MapVector<llvm::Function *,
                          llvm::SmallVector<llvm::Function *>> &clones) {
  for (llvm::GlobalVariable &table : llvm::make_early_inc_range(
           module.globals())) {
    if (!isKernelTable(table, clones))
      continue;
    auto *type = llvm::cast<llvm::ArrayType>(table.getValueType());
    for (size_t i = 0; i < kNumLevels; ++i) {
      llvm::SmallVector<llvm::Constant *> levelEntries;
      for (uint64_t k = 0; k < type->getNumElements(); ++k)
        levelEntries.push_back(
            clones
                .find(llvm::cast<llvm::Function>(
                    table.getInitializer()->getAggregateElement(k)))
                ->second[i]);
      new llvm::GlobalVariable(module, type, /*isConstant=*/true,
                               llvm::GlobalValue::ExternalLinkage,
                               llvm::ConstantArray::get(type, levelEntries),
                               table.getName() + "_" + level(i).name);
    }
  }
}

} // namespace

std::vector<std::string>
cellc::kernelLevels(const TargetOptions &options) {
  // GNU indirect functions need ELF and glibc's loader (musl's rejects
  // them, Mach-O and COFF have none): elsewhere the default is the host.
  llvm::Triple host(llvm::sys::getDefaultTargetTriple());
  if (!options.cpu.empty() || host.getArch() != llvm::Triple::x86_64 ||
      !host.isOSBinFormatELF() || !host.isGNUEnvironment())
    return {};
  std::vector<std::string> names;
  for (size_t i = 0; i < kNumLevels; ++i)
    names.push_back(level(i).name.str());
  return names;
}

void cellc::multiversionKernels(llvm::Module &module) {
  // In module order, so that the object's bytes do not depend on addresses.
  llvm::MapVector<llvm::Function *, llvm::SmallVector<llvm::Function *>>
      clones;
  for (llvm::Function *kernel : collectKernels(module))
    for (size_t i = 0; i < kNumLevels; ++i)
      clones[kernel].push_back(cloneForLevel(*kernel, level(i)));
  addLevelTables(module, clones);
  for (auto &[kernel, levelClones] : clones) {
    llvm::Function *resolver =
        emitResolver(module, kernel->getName(), levelClones);
    auto *dispatch = llvm::GlobalIFunc::create(
        kernel->getFunctionType(), /*AddressSpace=*/0,
        llvm::GlobalValue::ExternalLinkage, "", resolver, &module);
    kernel->replaceAllUsesWith(dispatch);
    dispatch->takeName(kernel);
    kernel->eraseFromParent();
  }
}
