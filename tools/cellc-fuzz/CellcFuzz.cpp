//===- CellcFuzz.cpp - libFuzzer target: .cell text to an object ----------===//
//
// Runs, on every input, what `cellc FILE.cell -o FILE.o` runs: parse, check,
// the cell dialect, the optimisation passes with the backward kernels, the
// lowering to LLVM and object emission, into memory. The front end's
// diagnostics are discarded: rejecting an input is fine. Bugs are
//   - a crash, a hang (-timeout), a sanitizer report or a leak, and
//   - an error after the front end accepted the input: a cell the front end
//     accepts must compile, so the target prints the internal compiler
//     error and aborts, and libFuzzer keeps the input.
// Comment lines `# --dim NAME=VALUE` fix dimensions, as `cellc --dim` does.
// CELLC_FUZZ_STAGE=frontend|passes stops earlier (see Stage), for runs of
// millions of inputs; CELLC_FUZZ_STAGE=ptx emits PTX instead of an object. scripts/fuzz.sh builds and runs it (README, "Testing").
//
//===----------------------------------------------------------------------===//

#include "codegen/Codegen.h"
#include "frontend/Frontend.h"
#include "codegen/Registration.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

namespace {

/// How far an input accepted by the front end goes. Object emission is what
/// cellc does; it spends most of its time in LLVM's optimiser and code
/// generator (about 100 ms a cell), so the earlier stages let a run cover
/// cellc's own code a thousand times faster.
enum class Stage {
  FrontEnd, ///< parse, check, the cell dialect
  Passes,   ///< and cellc's passes and lowering, to the LLVM dialect
  Object,   ///< and LLVM: O3 and an object file (default)
  PTX       ///< the passes, then the GPU lowering and PTX instead of an object
};

Stage stageFromEnvironment() {
  const char *stage = std::getenv("CELLC_FUZZ_STAGE");
  if (stage && std::strcmp(stage, "frontend") == 0)
    return Stage::FrontEnd;
  if (stage && std::strcmp(stage, "passes") == 0)
    return Stage::Passes;
  if (stage && std::strcmp(stage, "ptx") == 0)
    return Stage::PTX;
  return Stage::Object;
}

const Stage kStage = stageFromEnvironment();

const mlir::DialectRegistry &dialects() {
  static const mlir::DialectRegistry registry = [] {
    mlir::DialectRegistry result;
    cellc::registerAllCellDialects(result);
    return result;
  }();
  return registry;
}

/// Everything reported after the front end, printed when the target aborts.
class InternalErrors {
public:
  explicit InternalErrors(mlir::MLIRContext &context)
      : stream(text), handler(&context, [this](mlir::Diagnostic &diagnostic) {
          stream << diagnostic.getLocation() << ": " << diagnostic << "\n";
          for (mlir::Diagnostic &note : diagnostic.getNotes())
            stream << "  note: " << note << "\n";
          return mlir::success();
        }) {}

  /// The input passed the front end and `stage` failed: that is a bug.
  [[noreturn]] void abortAfter(const char *stage) {
    llvm::errs() << "cellc-fuzz: the front end accepted the input, then "
                 << stage << " failed (an internal compiler error):\n"
                 << stream.str();
    std::abort();
  }

private:
  std::string text;
  llvm::raw_string_ostream stream;
  mlir::ScopedDiagnosticHandler handler;
};

/// The `--dim` bindings the input's `# --dim NAME=VALUE` lines ask for;
/// malformed ones are ignored, like any comment.
std::map<std::string, int64_t> fixedDims(llvm::StringRef source) {
  std::map<std::string, int64_t> dims;
  llvm::SmallVector<llvm::StringRef> lines;
  source.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    if (!line.consume_front("# --dim "))
      continue;
    auto [name, value] = line.trim().split('=');
    int64_t number;
    // cellc's command line accepts positive 64-bit values only.
    if (!name.empty() && !value.getAsInteger(10, number) && number > 0)
      dims[name.str()] = number;
  }
  return dims;
}

/// What `cellc --target=nvptx -emit=ptx` runs after the passes: the GPU
/// lowering (lanes, barriers, NVVM intrinsics) and NVPTX's code generator.
void emitPTX(mlir::ModuleOp module, InternalErrors &errors) {
  mlir::PassManager lower(module.getContext());
  cellc::addLoweringToGPUPasses(lower);
  if (mlir::failed(lower.run(module)))
    errors.abortAfter("the lowering to GPU kernels");
  std::string ptx;
  llvm::raw_string_ostream ptxStream(ptx);
  if (mlir::failed(cellc::emitPTX(module, cellc::GPUOptions(), ptxStream)))
    errors.abortAfter("PTX emission");
}

void compile(llvm::StringRef source) {
  // One thread: a thread pool per input would cost more than the input. The
  // dialects are loaded once the front end accepts the input (as cellc
  // loads them all): most inputs do not get that far.
  mlir::MLIRContext context(dialects(), mlir::MLIRContext::Threading::DISABLED);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "fuzz.cell"), llvm::SMLoc());
  mlir::ScopedDiagnosticHandler discard(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });

  std::unique_ptr<cellc::ParsedFile> file =
      cellc::parseCellFile(sourceMgr, context);
  if (!file || !cellc::checkCellFile(*file, context, fixedDims(source)))
    return;

  context.loadAllAvailableDialects();
  InternalErrors errors(context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      cellc::generateCellIR(*file, context);
  if (!module)
    errors.abortAfter("generating the cell dialect");
  if (kStage == Stage::FrontEnd)
    return;
  mlir::PassManager optimize(&context);
  cellc::addCellOptimizationPasses(optimize, /*withBackward=*/true);
  if (mlir::failed(optimize.run(*module)))
    errors.abortAfter("the optimisation passes");
  if (kStage == Stage::PTX)
    return emitPTX(*module, errors);
  mlir::PassManager lower(&context);
  cellc::addLoweringToLLVMPasses(lower);
  if (mlir::failed(lower.run(*module)))
    errors.abortAfter("the lowering to LLVM");
  if (kStage == Stage::Passes)
    return;
  llvm::SmallString<0> object;
  llvm::raw_svector_ostream objectStream(object);
  // A generic CPU: the same objects on every machine that runs the fuzzer.
  if (mlir::failed(cellc::emitObjectFile(
          *module, cellc::TargetOptions{"x86-64"}, objectStream)))
    errors.abortAfter("object emission");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  compile(llvm::StringRef(reinterpret_cast<const char *>(data), size));
  return 0;
}
