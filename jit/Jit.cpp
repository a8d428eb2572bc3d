//===- Jit.cpp - Compile a .cell in-process and load it with ORC ----------===//

#include "jit/Jit.h"

#include "codegen/Codegen.h"
#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Frontend.h"
#include "ir/CellOps.h"
#include "codegen/Registration.h"
#include "cellrt/PlanTables.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#include <chrono>
#include <dlfcn.h>
#include <cstring>
#include <mutex>

using namespace cellc::jit;

struct CompiledCell::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  cellrt_image image{};
  std::string cellName;
  std::string warnings;
  std::string objectPath;
  bool fromCache = false;
  double seconds = 0;
};

namespace cellc::jit {
/// Builds CompiledCells for the functions below (the constructor is private).
struct CompiledCellFactory {
  static CompiledCell make(std::unique_ptr<CompiledCell::Impl> impl) {
    return CompiledCell(std::move(impl));
  }
};
} // namespace cellc::jit

CompiledCell::CompiledCell(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
CompiledCell::CompiledCell(CompiledCell &&) noexcept = default;
CompiledCell &CompiledCell::operator=(CompiledCell &&) noexcept = default;
CompiledCell::~CompiledCell() = default;
const cellrt_image &CompiledCell::image() const { return impl->image; }
const std::string &CompiledCell::cellName() const { return impl->cellName; }
const std::string &CompiledCell::warnings() const { return impl->warnings; }
bool CompiledCell::fromCache() const { return impl->fromCache; }
double CompiledCell::compileSeconds() const { return impl->seconds; }
const std::string &CompiledCell::objectPath() const { return impl->objectPath; }

// Bump when the object's contract changes in a way the build identity below
// would not catch. 2: entries keep the compile's warnings.
const char *cellc::jit::cacheVersion() { return "cellc-jit-object-3"; }

std::string cellc::jit::defaultCacheDir() {
  if (auto dir = llvm::sys::Process::GetEnv("CELLC_CACHE_DIR"))
    return *dir;
  llvm::SmallString<128> path;
  if (auto xdg = llvm::sys::Process::GetEnv("XDG_CACHE_HOME");
      xdg && !xdg->empty()) {
    path = *xdg;
  } else if (auto home = llvm::sys::Process::GetEnv("HOME");
             home && !home->empty()) {
    path = *home;
    llvm::sys::path::append(path, ".cache");
  } else {
    return "";
  }
  llvm::sys::path::append(path, "cellc");
  return std::string(path);
}

namespace {

cellrt::Status error(std::string message) {
  return cellrt::Status::error(std::move(message));
}

} // namespace

std::string cellc::jit::compilerIdentity() {
  static std::string identity = [] {
    // The file that holds this code: the executable when the JIT is linked
    // into it, libcellc-jit.so when a program loads it (Python). The
    // process's executable (python3) would not change when the compiler
    // does, and stale objects would come back from the cache.
    Dl_info info;
    std::string exe =
        dladdr(reinterpret_cast<void *>(&cellc::jit::cacheVersion), &info) &&
                info.dli_fname
            ? info.dli_fname
            : llvm::sys::fs::getMainExecutable(
                  nullptr, reinterpret_cast<void *>(&cellc::jit::cacheVersion));
    llvm::sys::fs::file_status status;
    if (exe.empty() || llvm::sys::fs::status(exe, status))
      return std::string("unknown-build");
    return exe + ":" + std::to_string(status.getSize()) + ":" +
           std::to_string(llvm::sys::toTimeT(status.getLastModificationTime()));
  }();
  return identity;
}

namespace {

std::string hostCPUIdentity() {
  std::string identity = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> features;
  if (llvm::sys::getHostCPUFeatures(features)) {
    std::vector<std::string> enabled;
    for (auto &feature : features)
      if (feature.second)
        enabled.push_back(feature.first().str());
    std::sort(enabled.begin(), enabled.end());
    for (const std::string &name : enabled)
      identity += "," + name;
  }
  return identity;
}

/// The cache key: everything that determines the entry's bytes. The display
/// name is part of it because the warnings kept with the object name it.
std::string cacheKey(const std::string &source, const std::string &displayName,
                     const CompileOptions &options) {
  llvm::SHA256 hash;
  auto add = [&](llvm::StringRef text) {
    hash.update(std::to_string(text.size()));
    hash.update(":");
    hash.update(text);
  };
  add(cacheVersion());
  add(compilerIdentity());
  add(options.cpu.empty() ? hostCPUIdentity() : "cpu=" + options.cpu);
  add(options.cellName);
  for (const auto &[name, value] : options.fixedDims)
    add(name + "=" + std::to_string(value));
  add(options.withBackward ? "backward" : "inference");
  for (const std::string &probe : options.probes)
    add("probe=" + probe);
  add(displayName);
  add(source);
  std::array<uint8_t, 32> digest = hash.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

/// The name of the cell whose plan `object` exports (`cellc_<cell>_plan`).
std::optional<std::string> cellNameInObject(llvm::MemoryBufferRef object) {
  auto file = llvm::object::ObjectFile::createObjectFile(object);
  if (!file) {
    llvm::consumeError(file.takeError());
    return std::nullopt;
  }
  for (const llvm::object::SymbolRef &symbol : (*file)->symbols()) {
    auto name = symbol.getName();
    if (!name) {
      llvm::consumeError(name.takeError());
      continue;
    }
    if (name->startswith("cellc_") && name->endswith("_plan"))
      return name->drop_front(6).drop_back(5).str();
  }
  return std::nullopt;
}

/// Loads `object` into a fresh LLJIT and looks up the cell's image.
cellrt::Status loadObject(std::unique_ptr<llvm::MemoryBuffer> object,
                          const std::string &cellName,
                          CompiledCell::Impl &impl) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit)
    return error("cannot create the JIT: " + llvm::toString(jit.takeError()));
  // Generated kernels may call memset/memcpy and libm: resolve them here.
  auto processSymbols =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
          (*jit)->getDataLayout().getGlobalPrefix());
  if (!processSymbols)
    return error("cannot search this process's symbols: " +
                 llvm::toString(processSymbols.takeError()));
  (*jit)->getMainJITDylib().addGenerator(std::move(*processSymbols));
  if (llvm::Error err = (*jit)->addObjectFile(std::move(object)))
    return error("cannot load the compiled object: " +
                 llvm::toString(std::move(err)));

  std::string prefix = "cellc_" + cellName;
  std::map<std::string, llvm::orc::ExecutorAddr> addresses;
  for (const char *suffix :
       {"_plan", "_kernels", "_kernel_names", "_num_kernels"}) {
    auto address = (*jit)->lookup(prefix + suffix);
    if (!address)
      return error("the compiled object lacks " + prefix + suffix + ": " +
                   llvm::toString(address.takeError()));
    addresses[suffix] = *address;
  }
  impl.image.plan = addresses["_plan"].toPtr<const char *>();
  impl.image.kernels = addresses["_kernels"].toPtr<const cellrt_kernel_fn *>();
  impl.image.kernel_names =
      addresses["_kernel_names"].toPtr<const char *const *>();
  impl.image.num_kernels = *addresses["_num_kernels"].toPtr<const int64_t *>();
  impl.jit = std::move(*jit);
  impl.cellName = cellName;
  return cellrt::Status::success();
}

/// Picks the cell to compile; an error names the choices.
cellrt::Expected<std::string> selectCell(const cellc::ast::Module &module,
                                         const std::string &displayName,
                                         const std::string &requested) {
  std::string names;
  for (const cellc::ast::Cell &cell : module.cells) {
    names += (names.empty() ? "" : ", ") + cell.name;
    if (cell.name == requested)
      return requested;
  }
  if (!requested.empty())
    return error(displayName + ": error: no cell named '" + requested +
                 "' (the file defines: " + names + ")");
  if (module.cells.size() == 1)
    return module.cells.front().name;
  if (module.cells.empty())
    return error(displayName + ": error: the file defines no cell");
  return error(displayName + ": error: the file defines several cells (" +
               names + "); choose one with --cell NAME");
}

/// The front end and the cell-level passes on `source`: the optimised
/// module of the selected cell, or the diagnostics. `diagnostics` collects
/// everything reported (warnings included) while it lives.
struct OptimizedCell {
  std::unique_ptr<mlir::MLIRContext> context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::string cellName;
};

cellrt::Expected<OptimizedCell>
optimizeCell(const std::string &source, const std::string &displayName,
             const CompileOptions &options, std::string &warnings) {
  mlir::DialectRegistry registry;
  cellc::registerAllCellDialects(registry);
  OptimizedCell result;
  result.context = std::make_unique<mlir::MLIRContext>(registry);
  mlir::MLIRContext &context = *result.context;
  context.loadAllAvailableDialects();

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, displayName), llvm::SMLoc());
  std::string diagnosticText;
  llvm::raw_string_ostream diagnosticStream(diagnosticText);
  cellc::SourceDiagnosticHandler diagnostics(sourceMgr, &context,
                                             diagnosticStream);
  auto failedWith = [&]() { return error(diagnosticStream.str()); };

  // Front end: parse, check names and shapes, pick the cell, generate IR.
  auto file = cellc::parseCellFile(sourceMgr, context);
  if (!file || !cellc::checkCellFile(*file, context, options.fixedDims))
    return failedWith();
  auto cellName = selectCell(*file->module, displayName, options.cellName);
  if (!cellName)
    return cellName.getStatus();
  result.module =
      cellc::generateCellIR(*file, context, *cellName, options.probes);
  if (!result.module)
    return failedWith();

  // Hoist, stack, fuse (and derive the backward kernels for training).
  // From here on an error is cellc's bug, never the cell's.
  cellc::InternalErrorScope internalErrors(context);
  mlir::PassManager optimize(&context);
  cellc::addCellOptimizationPasses(optimize, options.withBackward);
  if (mlir::failed(optimize.run(*result.module)))
    return failedWith();
  warnings = diagnosticStream.str();
  result.cellName = *cellName;
  return result;
}

/// Everything the back end reports while it lives (lowering and code
/// generation have no source locations to point at).
class CollectedDiagnostics {
public:
  explicit CollectedDiagnostics(mlir::MLIRContext &context)
      : stream(collected),
        handler(&context, [this](mlir::Diagnostic &diagnostic) {
          stream << diagnostic << "\n";
          return mlir::success();
        }) {}
  std::string text() { return stream.str(); }

private:
  std::string collected;
  llvm::raw_string_ostream stream;
  mlir::ScopedDiagnosticHandler handler;
};

/// Runs cellc's pipeline on `source` and writes the object into `object`.
/// Returns the compiled cell's name, or the diagnostics.
cellrt::Expected<std::string>
compileToObject(const std::string &source, const std::string &displayName,
                const CompileOptions &options,
                llvm::SmallVectorImpl<char> &object, std::string &warnings) {
  auto cell = optimizeCell(source, displayName, options, warnings);
  if (!cell)
    return cell.getStatus();
  mlir::ModuleOp module = *cell->module;
  CollectedDiagnostics diagnostics(*cell->context);
  // Kernels to loops to the LLVM dialect, plan and kernel table as data.
  mlir::PassManager lower(cell->context.get());
  cellc::addLoweringToLLVMPasses(lower);
  {
    cellc::InternalErrorScope internalErrors(*cell->context);
    if (mlir::failed(lower.run(module)))
      return error(diagnostics.text());
  }
  // LLVM O3 for the target CPU, into memory.
  llvm::raw_svector_ostream objectStream(object);
  if (mlir::failed(cellc::emitObjectFile(
          module,
          // Compiled where it runs: this host's CPU, one version per kernel.
          cellc::TargetOptions{options.cpu.empty() ? "native" : options.cpu},
          objectStream)))
    return error(diagnostics.text());
  return cell->cellName;
}

// A cache entry is the object, the warnings its compile reported (replayed
// on every hit, as ccache replays a compiler's output) and a trailer: the
// warnings' size, the SHA-256 of everything before the digest and this tag.
// Trailing bytes leave the ELF object valid for other tools, and one file
// keeps the object and its checksum in a single rename.
const llvm::StringRef kTrailerTag = "CELLCSUM";
const size_t kDigestSize = 32;
const size_t kTrailerSize = 8 + kDigestSize + 8;

std::array<uint8_t, 32> sha256(llvm::ArrayRef<llvm::StringRef> parts) {
  llvm::SHA256 hash;
  for (llvm::StringRef part : parts)
    hash.update(part);
  return hash.final();
}

/// A cache entry's object and warnings.
struct CacheEntry {
  std::unique_ptr<llvm::MemoryBuffer> object;
  std::string warnings;
};

/// The object and warnings in a cache entry, or std::nullopt when the entry
/// is truncated or its bytes do not match the checksum (a damaged object
/// could crash when run).
std::optional<CacheEntry> verifiedEntry(llvm::StringRef entry) {
  if (entry.size() <= kTrailerSize || !entry.endswith(kTrailerTag))
    return std::nullopt;
  llvm::StringRef hashed = entry.drop_back(kDigestSize + kTrailerTag.size());
  std::array<uint8_t, 32> digest = sha256({hashed});
  if (std::memcmp(digest.data(), hashed.end(), kDigestSize) != 0)
    return std::nullopt;
  uint64_t warningsSize =
      llvm::support::endian::read64le(hashed.end() - sizeof(uint64_t));
  llvm::StringRef contents = hashed.drop_back(sizeof(uint64_t));
  if (warningsSize >= contents.size())
    return std::nullopt;
  return CacheEntry{llvm::MemoryBuffer::getMemBufferCopy(
                        contents.drop_back(warningsSize), "cached.o"),
                    contents.take_back(warningsSize).str()};
}

/// Writes `object`, `warnings` and the trailer to `path` atomically (a
/// unique temporary, then rename), so concurrent compiles never see a
/// partial file. Failures only cost the cache, so they are ignored.
void writeCacheFile(const std::string &dir, const std::string &path,
                    llvm::StringRef object, llvm::StringRef warnings) {
  if (llvm::sys::fs::create_directories(dir))
    return;
  int fd;
  llvm::SmallString<256> temporary;
  if (llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, temporary))
    return;
  {
    char sizeBytes[sizeof(uint64_t)];
    llvm::support::endian::write64le(sizeBytes, warnings.size());
    llvm::StringRef size(sizeBytes, sizeof(sizeBytes));
    std::array<uint8_t, 32> digest = sha256({object, warnings, size});
    llvm::raw_fd_ostream stream(fd, /*shouldClose=*/true);
    stream << object << warnings << size;
    stream.write(reinterpret_cast<const char *>(digest.data()), kDigestSize);
    stream << kTrailerTag;
    stream.flush();
    if (stream.has_error()) {
      stream.clear_error();
      llvm::sys::fs::remove(temporary);
      return;
    }
  }
  if (llvm::sys::fs::rename(temporary, path))
    llvm::sys::fs::remove(temporary);
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

CompileResult cellc::jit::compileSource(const std::string &source,
                                        const std::string &displayName,
                                        const CompileOptions &options) {
  auto start = std::chrono::steady_clock::now();
  auto impl = std::make_unique<CompiledCell::Impl>();
  std::string cacheDir =
      options.cacheDir ? *options.cacheDir : defaultCacheDir();
  std::string objectPath;
  if (!cacheDir.empty()) {
    llvm::SmallString<256> path(cacheDir);
    llvm::sys::path::append(path,
                            cacheKey(source, displayName, options) + ".o");
    objectPath = std::string(path);
    impl->objectPath = objectPath;
  }

  // A cache hit skips MLIR entirely: read the object, find its cell, load.
  if (!objectPath.empty()) {
    auto file = llvm::MemoryBuffer::getFile(objectPath);
    auto cached = file ? verifiedEntry((*file)->getBuffer()) : std::nullopt;
    if (cached) {
      std::optional<std::string> name =
          cellNameInObject(cached->object->getMemBufferRef());
      if (name && loadObject(std::move(cached->object), *name, *impl).ok()) {
        impl->warnings = std::move(cached->warnings);
        impl->fromCache = true;
        impl->seconds = secondsSince(start);
        return CompiledCellFactory::make(std::move(impl));
      }
      impl->jit.reset();
    }
    // A missing, truncated or damaged entry: compile and replace it.
  }

  llvm::SmallVector<char, 0> object;
  auto cellName =
      compileToObject(source, displayName, options, object, impl->warnings);
  if (!cellName)
    return cellName.getStatus();
  if (!objectPath.empty())
    writeCacheFile(cacheDir, objectPath,
                   llvm::StringRef(object.data(), object.size()),
                   impl->warnings);
  cellrt::Status loaded = loadObject(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(object.data(), object.size()), displayName + ".o"),
      *cellName, *impl);
  if (!loaded.ok())
    return loaded;
  impl->seconds = secondsSince(start);
  return CompiledCellFactory::make(std::move(impl));
}

CompileResult cellc::jit::compileFile(const std::string &path,
                                      const CompileOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return error(path + ": error: cannot read: " + buffer.getError().message());
  return compileSource((*buffer)->getBuffer().str(), path, options);
}

cellrt::Expected<GpuCode>
cellc::jit::compileSourceForGPU(const std::string &source,
                                const std::string &displayName,
                                const CompileOptions &options,
                                const std::string &gpuArch) {
  GpuCode code;
  auto cell = optimizeCell(source, displayName, options, code.warnings);
  if (!cell)
    return cell.getStatus();
  code.cellName = cell->cellName;
  CollectedDiagnostics diagnostics(*cell->context);
  // The plan is the CPU's (`cellc -emit=tables`): lower a copy to loops and
  // encode it; the kernels go to PTX from the original.
  mlir::OwningOpRef<mlir::ModuleOp> forPlan = cell->module->clone();
  mlir::PassManager toLoops(cell->context.get());
  toLoops.addPass(mlir::cell::createLowerToLoops());
  if (mlir::failed(toLoops.run(*forPlan)))
    return error(diagnostics.text());
  for (auto cellOp : forPlan->getOps<mlir::cell::CellOp>()) {
    mlir::FailureOr<cellrt::Plan> plan = cellc::emitPlan(cellOp);
    if (mlir::failed(plan))
      return error(diagnostics.text());
    code.tables = cellrt::encodePlan(*plan);
  }
  mlir::PassManager toGPU(cell->context.get());
  cellc::addLoweringToGPUPasses(toGPU);
  if (mlir::failed(toGPU.run(*cell->module)))
    return error(diagnostics.text());
  cellc::GPUOptions gpu;
  gpu.arch = gpuArch;
  llvm::raw_string_ostream ptxStream(code.ptx);
  if (mlir::failed(cellc::emitPTX(*cell->module, gpu, ptxStream)))
    return error(diagnostics.text());
  ptxStream.flush();
  return code;
}

cellrt::Expected<GpuCode>
cellc::jit::compileFileForGPU(const std::string &path,
                              const CompileOptions &options,
                              const std::string &gpuArch) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return error(path + ": error: cannot read: " + buffer.getError().message());
  return compileSourceForGPU((*buffer)->getBuffer().str(), path, options,
                             gpuArch);
}
