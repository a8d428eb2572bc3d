//===- cellc.cpp - The cell compiler driver -------------------------------===//
//
// cellc FILE.cell [-o OUT] [-emit=ast|mlir|mlir-opt|plan|llvm|obj|header]
//       [--cell NAME] [--dim N=V]... [--probe NAME]... [-x=cell|mlir]
//       [--mcpu=CPU] [--precision=f32|bf16] [--max-cells=N]
// cellc run FILE.cell --dir D ...     (RunCommand.cpp)
// cellc check FILE.cell ...           (runs cellc-check)
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "frontend/Diagnostics.h"
#include "frontend/Frontend.h"
#include "ir/CellOps.h"
#include "tools/cellc/Subcommands.h"
#include "cellrt/PlanTables.h"
#include "codegen/Registration.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/ToolUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <optional>

using namespace mlir;
namespace cl = llvm::cl;

namespace {
enum class Emit {
  AST,
  MLIR,
  OptimizedMLIR,
  Schedule,
  Plan,
  Tables,
  LLVMIR,
  Object,
  Header,
  PTX,
  Cubin
};
enum class Target { CPU, NVPTX };
enum class InputKind { Cell, MLIR };

cl::OptionCategory cellcCategory("cellc options");

cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input .cell>"),
                                   cl::Required, cl::cat(cellcCategory));
cl::opt<std::string> outputFilename(
    "o", cl::desc("Output file (default: <input>.o for objects, stdout "
                  "otherwise)"),
    cl::value_desc("file"), cl::cat(cellcCategory));
cl::opt<Emit> emitAction(
    "emit", cl::desc("What to produce"), cl::init(Emit::Object),
    cl::values(
        clEnumValN(Emit::AST, "ast", "the checked AST with shapes"),
        clEnumValN(Emit::MLIR, "mlir", "the cell dialect as written"),
        clEnumValN(Emit::OptimizedMLIR, "mlir-opt",
                   "the cell dialect after hoisting, stacking and fusion"),
        clEnumValN(Emit::Schedule, "schedule",
                   "the schedule as IR (sched.program): buffers, weights, "
                   "products and kernels per phase"),
        clEnumValN(Emit::Plan, "plan",
                   "the runtime's execution plan as text, for people"),
        clEnumValN(Emit::Tables, "tables",
                   "the plan's binary tables, as objects carry them (for "
                   "cellrt::cuda::loadCell with -emit=ptx)"),
        clEnumValN(Emit::LLVMIR, "llvm", "optimised LLVM IR of the kernels"),
        clEnumValN(Emit::Object, "obj", "an object file (default)"),
        clEnumValN(Emit::Header, "header", "the C header of the object"),
        clEnumValN(Emit::PTX, "ptx", "PTX of every kernel (--target=nvptx)"),
        clEnumValN(Emit::Cubin, "cubin",
                   "a cubin through ptxas (--target=nvptx)")),
    cl::cat(cellcCategory));
cl::opt<InputKind> inputKind(
    "x", cl::desc("Input language"), cl::init(InputKind::Cell),
    cl::values(clEnumValN(InputKind::Cell, "cell", "a .cell source file"),
               clEnumValN(InputKind::MLIR, "mlir", "cell dialect IR")),
    cl::cat(cellcCategory));
cl::opt<std::string> cellName("cell",
                              cl::desc("Compile only this cell of the file"),
                              cl::value_desc("name"), cl::cat(cellcCategory));
cl::list<std::string> dimBindings(
    "dim", cl::desc("Fix a symbolic dimension at compile time"),
    cl::value_desc("N=V"), cl::cat(cellcCategory));
cl::list<std::string> probes(
    "probe",
    cl::desc("Also emit this value of the step (e.g. a gate) per step, after "
             "the output; the runtime returns it as a probe array "
             "[T, B, LEN] (ForwardArgs::probes). Repeat or separate by commas"),
    cl::value_desc("name"), cl::CommaSeparated, cl::cat(cellcCategory));
cl::opt<bool> inferenceOnly(
    "inference-only",
    cl::desc("Omit the backward kernels and the training plan"),
    cl::init(false), cl::cat(cellcCategory));
cl::opt<bool> saveActivations(
    "save-activations",
    cl::desc("Training: keep gate activations (sigmoid, tanh, exp, log, "
             "softplus) from forward instead of recomputing them in "
             "backward. Default: recompute; forward keeps only GEMM outputs, "
             "kernel operands and states"),
    cl::init(false), cl::cat(cellcCategory));
cl::opt<Target> target(
    "target", cl::desc("Where the kernels run"), cl::init(Target::CPU),
    cl::values(clEnumValN(Target::CPU, "cpu", "this CPU (default)"),
               clEnumValN(Target::NVPTX, "nvptx",
                          "NVIDIA GPUs: PTX for the CUDA driver")),
    cl::cat(cellcCategory));
cl::opt<std::string> gpuArch("gpu-arch",
                             cl::desc("GPU architecture (default sm_80)"),
                             cl::value_desc("sm_80|sm_90"), cl::init("sm_80"),
                             cl::cat(cellcCategory));
cl::opt<std::string> precision(
    "precision",
    cl::desc("What the products read: f32 (default), or bf16: weights, "
             "inputs, states and gradients rounded to bfloat16 into the "
             "GEMMs, summed in f32; gate math, states and every array stay "
             "f32. Recorded in the plan; the runtime may change it "
             "(Cell::withPrecision). CPU only"),
    cl::value_desc("f32|bf16"), cl::init("f32"), cl::cat(cellcCategory));
cl::opt<unsigned> maxCells(
    "max-cells",
    cl::desc("Compile at most this many cells through LLVM in one run "
             "(default 16): each takes LLVM 0.1-0.5 s, for three "
             "instruction-set levels. --cell NAME compiles one"),
    cl::value_desc("N"), cl::init(cellc::limits::kMaxCompiledCells),
    cl::cat(cellcCategory));
cl::opt<std::string> targetCPU(
    "mcpu",
    cl::desc("Target CPU: 'native' (this host's CPU and features) or a CPU "
             "name (x86-64-v3, skylake-avx512, ...). Default: portable, each "
             "kernel for x86-64, AVX2 and AVX-512, the best the CPU has "
             "chosen when the object is loaded"),
    cl::value_desc("cpu"), cl::cat(cellcCategory));

/// Parses `--dim` values; reports malformed ones.
bool parseDimBindings(std::map<std::string, int64_t> &dims) {
  bool ok = true;
  for (const std::string &binding : dimBindings) {
    auto [name, value] = llvm::StringRef(binding).split('=');
    int64_t number;
    if (name.empty() || value.getAsInteger(10, number) || number <= 0) {
      llvm::errs() << "cellc: error: --dim expects NAME=POSITIVE_INTEGER, got '"
                   << binding << "'\n";
      ok = false;
      continue;
    }
    dims[name.str()] = number;
  }
  return ok;
}

/// The cell dialect module for the input, or null: after diagnostics
/// (`failed` set) or because the AST was all that was asked for.
OwningOpRef<ModuleOp> loadModule(llvm::SourceMgr &sourceMgr,
                                 MLIRContext &context, bool &failed) {
  failed = true;
  if (inputKind == InputKind::MLIR) {
    auto module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    failed = !module;
    return module;
  }
  std::map<std::string, int64_t> dims;
  if (!parseDimBindings(dims))
    return nullptr;
  auto file = cellc::parseCellFile(sourceMgr, context);
  if (!file || !cellc::checkCellFile(*file, context, dims))
    return nullptr;
  if (emitAction == Emit::AST) {
    cellc::printAST(*file, llvm::outs());
    failed = false;
    return nullptr;
  }
  std::vector<std::string> probeNames(probes.begin(), probes.end());
  auto module = cellc::generateCellIR(*file, context, cellName, probeNames);
  failed = !module;
  return module;
}

std::string defaultOutputName() {
  if (!outputFilename.empty())
    return outputFilename;
  if (emitAction == Emit::Cubin)
    return llvm::sys::path::stem(inputFilename).str() + ".cubin";
  if (emitAction != Emit::Object)
    return "-";
  return llvm::sys::path::stem(inputFilename).str() + ".o";
}

/// PTX text, or a cubin assembled by ptxas from it.
LogicalResult emitGPU(ModuleOp module, PassManager &lowering,
                      llvm::raw_ostream &os) {
  if (target != Target::NVPTX) {
    llvm::errs() << "cellc: error: -emit=ptx and -emit=cubin need "
                    "--target=nvptx\n";
    return failure();
  }
  cellc::addLoweringToGPUPasses(lowering);
  if (failed(lowering.run(module)))
    return failure();
  cellc::GPUOptions options;
  options.arch = gpuArch;
  std::string ptx;
  llvm::raw_string_ostream ptxStream(ptx);
  if (failed(cellc::emitPTX(module, options, ptxStream)))
    return failure();
  if (emitAction == Emit::PTX) {
    os << ptx;
    return success();
  }
  // ptxas reads and writes files.
  llvm::SmallString<128> ptxPath, cubinPath;
  if (llvm::sys::fs::createTemporaryFile("cellc", "ptx", ptxPath) ||
      llvm::sys::fs::createTemporaryFile("cellc", "cubin", cubinPath)) {
    llvm::errs() << "cellc: error: cannot create temporary files\n";
    return failure();
  }
  llvm::FileRemover removePtx(ptxPath), removeCubin(cubinPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream file(ptxPath, ec);
    file << ptx;
  }
  auto ptxas = llvm::sys::findProgramByName(
      "ptxas", {"/usr/local/cuda/bin"});
  if (!ptxas) {
    llvm::errs() << "cellc: error: ptxas not found (install the CUDA "
                    "toolkit or use -emit=ptx)\n";
    return failure();
  }
  llvm::StringRef args[] = {*ptxas, "-arch", gpuArch, ptxPath, "-o",
                            cubinPath};
  std::string message;
  if (llvm::sys::ExecuteAndWait(*ptxas, args, std::nullopt, {}, 0, 0,
                                &message) != 0) {
    llvm::errs() << "cellc: error: ptxas rejected the PTX" << message << "\n";
    return failure();
  }
  auto cubin = llvm::MemoryBuffer::getFile(cubinPath);
  if (!cubin) {
    llvm::errs() << "cellc: error: ptxas wrote no cubin\n";
    return failure();
  }
  os << (*cubin)->getBuffer();
  return success();
}

/// Every cell's precision (--precision, or a `cell.precision` attribute in
/// IR read with -x=mlir) is one the target multiplies in.
LogicalResult checkPrecisionForTarget(ModuleOp module) {
  for (auto cell : module.getOps<cell::CellOp>()) {
    FailureOr<cellrt::Precision> cellPrecision = cellc::productPrecision(cell);
    if (failed(cellPrecision))
      return failure();
    if (*cellPrecision == cellrt::Precision::BF16 && target == Target::NVPTX) {
      llvm::errs() << "cellc: error: --precision bf16 is for --target=cpu: "
                      "the CUDA backend multiplies in f32\n";
      return failure();
    }
  }
  return success();
}

/// Whether `emitAction` runs LLVM over every cell's kernels: the only work
/// of a run that costs seconds per cell.
bool emitsThroughLLVM() {
  return emitAction == Emit::Object || emitAction == Emit::LLVMIR ||
         emitAction == Emit::PTX || emitAction == Emit::Cubin;
}

/// Keeps a run within seconds (docs/cell-language.md, "Limits"): 300 small
/// cells in one file took 45 s, all of it LLVM's, where a cell file is
/// promised to compile in about a second. The error is at the first cell
/// past the bound and says how to go on.
LogicalResult checkCellCount(ModuleOp module) {
  auto cells = module.getOps<cell::CellOp>();
  size_t count = std::distance(cells.begin(), cells.end());
  unsigned bound = maxCells;
  if (!emitsThroughLLVM() || count <= bound)
    return success();
  cell::CellOp first = *std::next(cells.begin(), bound);
  // At the cell's text alone: the op itself is no help to the user.
  return emitError(first.getLoc())
         << "too many cells to compile in one run: " << count << ", at most "
         << bound
         << " (LLVM takes 0.1-0.5 s for each cell's kernels); compile one "
            "with --cell NAME, put the cells in several files (a build "
            "compiles them in parallel), or allow them with --max-cells="
         << count;
}

LogicalResult emitOutput(ModuleOp module, MLIRContext &context) {
  std::string errorMessage;
  auto output = openOutputFile(defaultOutputName(), &errorMessage);
  if (!output) {
    llvm::errs() << "cellc: error: " << errorMessage << "\n";
    return failure();
  }
  if (emitAction == Emit::MLIR) {
    module.print(output->os());
    output->keep();
    return success();
  }

  if (failed(checkCellCount(module)))
    return failure();

  // f32 is every plan's default: its IR and plans stay as they were unless
  // --precision is given, which overrides IR marked otherwise (-x=mlir).
  if (precision == "bf16" || precision.getNumOccurrences() > 0)
    cellc::setProductPrecision(module, precision);
  if (failed(checkPrecisionForTarget(module)))
    return failure();

  // From here until the back end an error is cellc's bug, never the cell's.
  std::optional<cellc::InternalErrorScope> internalErrors(std::in_place,
                                                          context);
  PassManager pm(&context);
  applyPassManagerCLOptions(pm);
  applyDefaultTimingPassManagerCLOptions(pm);
  cellc::addCellOptimizationPasses(pm, !inferenceOnly, saveActivations);
  if (failed(pm.run(module)))
    return failure();

  if (emitAction == Emit::OptimizedMLIR) {
    module.print(output->os());
  } else if (emitAction == Emit::Header) {
    std::vector<cellc::CompiledCellInfo> cells;
    for (auto cell : module.getOps<cell::CellOp>()) {
      cells.push_back({cell.getSymName().str(), cellc::countKernels(cell)});
    }
    cellc::emitHeader(cells, llvm::sys::path::filename(inputFilename),
                      cellc::kernelLevels({targetCPU}), output->os());
  } else {
    PassManager lowering(&context);
    applyPassManagerCLOptions(lowering);
    applyDefaultTimingPassManagerCLOptions(lowering);
    if (emitAction == Emit::Plan || emitAction == Emit::Tables ||
        emitAction == Emit::Schedule) {
      lowering.addPass(cell::createLowerToLoops());
      lowering.addPass(cell::createBuildSchedule());
      if (failed(lowering.run(module)))
        return failure();
      for (auto program : module.getOps<sched::ProgramOp>()) {
        if (emitAction == Emit::Schedule) {
          program.print(output->os());
          output->os() << "\n";
          continue;
        }
        FailureOr<cellrt::Plan> plan = sched::checkedPlan(program);
        if (failed(plan))
          return failure();
        output->os() << (emitAction == Emit::Tables
                             ? cellrt::encodePlan(*plan)
                             : cellrt::printPlan(*plan));
      }
    } else if (emitAction == Emit::PTX || emitAction == Emit::Cubin) {
      if (failed(emitGPU(module, lowering, output->os())))
        return failure();
    } else {
      cellc::addLoweringToLLVMPasses(lowering);
      if (failed(lowering.run(module)))
        return failure();
      // The target machine's errors (an unknown --mcpu) are the user's.
      internalErrors.reset();
      cellc::TargetOptions target{targetCPU};
      if (failed(emitAction == Emit::LLVMIR
                     ? cellc::emitLLVMIR(module, target, output->os())
                     : cellc::emitObjectFile(module, target, output->os())))
        return failure();
    }
  }
  output->keep();
  return success();
}
} // namespace

int main(int argc, char **argv) {
  // `cellc run ...`, `cellc plan ...` and `cellc check ...` are
  // subcommands (Subcommands.h).
  if (argc > 1 && llvm::StringRef(argv[1]) == "run")
    return cellc::runCommand(argc - 1, argv + 1);
  if (argc > 1 && llvm::StringRef(argv[1]) == "check")
    return cellc::checkCommand(argc - 1, argv + 1, argv[0]);
  if (argc > 1 && llvm::StringRef(argv[1]) == "plan")
    return cellc::planCommand(argc - 1, argv + 1);
  llvm::InitLLVM initLLVM(argc, argv);
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  // --mlir-timing: where the passes spend their time.
  registerDefaultTimingManagerCLOptions();
  registerAsmPrinterCLOptions();
  // LLVM's hundreds of backend options would bury cellc's own; they (and
  // MLIR's --mlir-print-ir-after-all etc.) still work, --help-hidden lists
  // them.
  cl::HideUnrelatedOptions(cellcCategory);
  // cellc's own version first; LLVM's (which built it) after.
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "cellc " CELLC_VERSION "\n";
    cl::PrintVersionMessage();
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "cellc: compile recurrent cells written as equations into fused CPU "
      "and GPU kernels\n\n"
      "  cellc cells/atr.cell -o atr_kernel.o   object with kernels + plan\n"
      "  cellc cells/atr.cell -emit=header      the C header for that object\n"
      "  cellc cells/gru.cell -emit=mlir-opt    IR after hoisting/fusion\n"
      "  cellc cells/gru.cell --target=nvptx -emit=ptx   PTX for NVIDIA GPUs\n"
      "  cellc run cells/atr.cell --dir D       run on .npy arrays in D\n"
      "  cellc plan atr_kernel.o                the plan the object carries\n"
      "  cellc check cells/atr.cell             check against LibTorch\n\n"
      "MLIR's options work too (--mlir-print-ir-after-all, "
      "--mlir-print-debuginfo, ...): --help-hidden lists every option.\n");

  if (maxCells == 0) {
    llvm::errs() << "cellc: error: --max-cells must be at least 1\n";
    return 1;
  }
  if (precision != "f32" && precision != "bf16") {
    llvm::errs() << "cellc: error: --precision takes f32 or bf16, got '"
                 << precision << "'\n";
    return 1;
  }

  DialectRegistry registry;
  cellc::registerAllCellDialects(registry);
  cellc::registerAllCellPasses();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string errorMessage;
  auto input = openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << "cellc: error: " << errorMessage << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  cellc::SourceDiagnosticHandler diagnostics(sourceMgr, &context);

  bool loadFailed;
  OwningOpRef<ModuleOp> module = loadModule(sourceMgr, context, loadFailed);
  if (!module)
    return loadFailed ? 1 : 0;
  return failed(emitOutput(*module, context)) ? 1 : 0;
}
