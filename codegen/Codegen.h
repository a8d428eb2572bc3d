//===- Codegen.h - From the cell dialect to objects and headers -*- C++ -*-===//

#ifndef CELLC_CODEGEN_CODEGEN_H
#define CELLC_CODEGEN_CODEGEN_H

#include "cellrt/Plan.h"
#include "ir/CellOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "ir/KernelAnalysis.h"
#include "schedule/BuildSchedule.h"
#include "schedule/Schedule.h"
#include "llvm/Support/CodeGen.h"

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

#include <string>
#include <vector>

namespace mlir::cell {
#define GEN_PASS_DECL
#include "codegen/Passes.h.inc"
} // namespace mlir::cell

namespace cellc {

void registerCodegenPasses();

/// While alive, errors reported through `context` (by a pass, a verifier
/// or the lowering) are re-emitted as internal compiler errors that say they
/// are cellc's bug. Install it once the front end has accepted the cell.
class InternalErrorScope {
public:
  explicit InternalErrorScope(mlir::MLIRContext &context);
  ~InternalErrorScope();
  InternalErrorScope(const InternalErrorScope &) = delete;
  InternalErrorScope &operator=(const InternalErrorScope &) = delete;

private:
  mlir::LogicalResult rewrite(mlir::Diagnostic &diagnostic);
  mlir::MLIRContext &context;
  mlir::DiagnosticEngine::HandlerID handlerId;
  bool rewriting = false;
};

/// How many kernels lower-to-loops makes of an optimised cell.
int64_t countKernels(mlir::cell::CellOp cell);

/// The name of kernel `index` of `cellName`.
std::string kernelSymbol(llvm::StringRef cellName, int64_t index);

/// Adds the cell-level passes (hoist, stack, fuse and, for training,
/// derive-backward).
/// `saveActivations`: see derive-backward's option of that name.
void addCellOptimizationPasses(mlir::PassManager &pm, bool withBackward,
                               bool saveActivations = false);
/// Adds everything from the optimised cell dialect to the LLVM dialect.
void addLoweringToLLVMPasses(mlir::PassManager &pm);

/// Options for object emission.
struct TargetOptions {
  /// "native": this host's CPU and features; a CPU name (x86-64-v3,
  /// skylake, ...): that CPU only; empty: portable, every kernel for each
  /// level kernelLevels() names, chosen when the object is loaded (x86-64;
  /// elsewhere the same as "native").
  std::string cpu;
};

/// The instruction-set levels a portable object has kernels for, baseline
/// first (sse2, avx2, avx512), each with a table cellc_<cell>_kernels_<level>;
/// empty when `options` compile for one CPU.
std::vector<std::string> kernelLevels(const TargetOptions &options);

/// Replaces every kernel (an external cellc_* function) by one clone per
/// level, internal, with that level's target features, and an indirect
/// function of the kernel's name that picks the best clone the CPU runs;
/// adds the per-level tables (Multiversion.cpp). For a module translated
/// for the x86-64 baseline, before optimisation.
void multiversionKernels(llvm::Module &module);

/// Translates an LLVM-dialect module and writes an object file. Errors are
/// emitted as diagnostics on the module.
mlir::LogicalResult emitObjectFile(mlir::ModuleOp module,
                                   const TargetOptions &options,
                                   llvm::raw_ostream &os);
/// Runs `machine`'s code generator on `llvmModule` (object file or
/// assembly/PTX text) into `os`; errors are emitted on `module`.
mlir::LogicalResult emitMachineCode(mlir::ModuleOp module,
                                    llvm::TargetMachine &machine,
                                    llvm::Module &llvmModule,
                                    llvm::CodeGenFileType fileType,
                                    llvm::raw_ostream &os);
/// Translates and prints LLVM IR (after the same O3 pipeline).
mlir::LogicalResult emitLLVMIR(mlir::ModuleOp module,
                               const TargetOptions &options,
                               llvm::raw_ostream &os);

/// What the header needs to know of one compiled cell.
struct CompiledCellInfo {
  std::string name;
  int64_t numKernels;
};

/// GPU code generation options.
struct GPUOptions {
  std::string arch = "sm_80";      ///< sm_80, sm_90, ...
  std::string ptxVersion = "ptx78"; ///< the PTX ISA feature
};

/// Adds the lowering of an optimised cell module to GPU kernels in the LLVM
/// dialect (NVVM thread indices, no runtime image: the host side takes the
/// plan from `-emit=plan`).
void addLoweringToGPUPasses(mlir::PassManager &pm);

/// Translates a module of GPU kernels and writes PTX text.
mlir::LogicalResult emitPTX(mlir::ModuleOp module, const GPUOptions &options,
                            llvm::raw_ostream &os);

/// The C header declaring what the object of these cells exports; `levels`
/// as kernelLevels() gives them for the object.
void emitHeader(llvm::ArrayRef<CompiledCellInfo> cells, llvm::StringRef source,
                llvm::ArrayRef<std::string> levels, llvm::raw_ostream &os);

} // namespace cellc

#endif // CELLC_CODEGEN_CODEGEN_H
