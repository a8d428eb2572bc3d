//===- Codegen.h - From the cell dialect to objects and headers -*- C++ -*-===//

#ifndef CELLC_CODEGEN_CODEGEN_H
#define CELLC_CODEGEN_CODEGEN_H

#include "cellrt/Plan.h"
#include "ir/CellOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
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

/// The symbolic dimensions a cell's types mention, sorted: the order of the
/// `dims` array every kernel of the cell receives.
std::vector<std::string> collectDims(mlir::cell::CellOp cell);

/// How many kernels lower-to-loops makes of an optimised cell.
int64_t countKernels(mlir::cell::CellOp cell);

/// The name of kernel `index` of `cellName`.
std::string kernelSymbol(llvm::StringRef cellName, int64_t index);

/// The schedule of a cell that has been through fuse-elementwise and
/// lower-to-loops: a `sched.program` built at `builder`'s insertion point
/// (cell-build-schedule builds one per cell at the end of the module).
mlir::FailureOr<mlir::sched::ProgramOp> buildSchedule(mlir::cell::CellOp cell,
                                                      mlir::OpBuilder &builder);

/// The plan of a cell that has been through fuse-elementwise and
/// lower-to-loops (docs/plan-format.md), checked by the runtime's own
/// rules (cellrt::validatePlan); a plan they refuse is an error on the cell
/// (a cellc bug).
mlir::FailureOr<cellrt::Plan> emitPlan(mlir::cell::CellOp cell);

/// Marks every cell of the module to multiply reading bfloat16 or f32
/// (`cellc --precision`): the `cell.precision` attribute, which
/// buildSchedule reads into the program and so the plan's `precision` line.
/// Unmarked cells are f32.
void setProductPrecision(mlir::ModuleOp module, llvm::StringRef precision);
/// The precision a cell is marked with (f32 when unmarked); an error on the
/// cell for a value other than "f32" or "bf16".
mlir::FailureOr<cellrt::Precision> productPrecision(mlir::cell::CellOp cell);

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
