//===- RunCommand.cpp - `cellc run`: a cell on .npy arrays ----------------===//
//
// cellc run FILE.cell [--cell NAME] [--dim N=V]... --dir D [--reverse]
//           [--device auto|cpu|gpu] [--probe NAME,...] [--params P.npz]
//           [--init-seed N [--init-fallback SCHEME]]
//
// Reads from D (float32 unless noted):
//   x_<input>.npy [T, B, LEN]      one per input (required)
//   param_<name>.npy [ROWS, COLS] or [LEN]   (required), or instead
//   params.npz (or --params P.npz) holding every param, named as in the cell
//   (with --init-seed N, a param that is not there is drawn from seed N by
//   the cell's initialiser and written to drawn_params.npz)
//   init_<state>.npy [B, LEN]      (optional: zeros)
//   lengths.npy int32/int64 [B]    (optional: every sequence has T steps)
//   dout.npy [T, B, OUT]           (optional)
//   dfinal_<state>.npy [B, LEN]    (optional)
// Writes out.npy, final_<state>.npy, probe_<name>.npy for each --probe
// (h' as probe_h_next.npy), and when dout or a dfinal is given
// the gradients of sum(out*dout) + sum_s sum(final_s*dfinal_s):
// grad_x_<input>.npy, grad_param_<name>.npy (grad_params.npz when the
// params came from an archive), grad_init_<state>.npy.
//
//===----------------------------------------------------------------------===//

#include "tools/cellc/Subcommands.h"

#include "cellrt/Runtime.h"
#include "jit/Jit.h"
#ifdef CELLC_HAS_CUDA
#include "CudaCell.h"
#endif
#include "jit/Npy.h"
#include "jit/Npz.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace cellc;
using npy::shapeString;

namespace {

const char kUsage[] =
    "usage: cellc run FILE.cell [--cell NAME] [--dim N=V]... --dir D "
    "[--reverse] [--no-cache] [--device auto|cpu|gpu] [--object X.so] "
    "[--probe NAME,...] [--params P.npz] [--init-seed N] "
    "[--init-fallback SCHEME]";

std::string pathIn(const std::string &dir, const std::string &file) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, file);
  return std::string(path);
}

/// The arrays of one run, read from and written to the directory.
struct RunArrays {
  const cellrt::Plan &plan;
  std::string dir;
  /// The .npz archive the params come from; empty: param_<name>.npy files.
  std::string paramsArchive;
  /// --init-seed: params missing from the directory or archive are drawn.
  bool drawMissing = false;
  /// The params to draw, in plan order.
  std::vector<std::string> drawn;
  int64_t T = 0, B = 0;
  std::map<std::string, int64_t> dims;
  std::map<std::string, npy::Array> inputs, params, initialStates,
      finalStateGradients;
  std::optional<npy::Array> outputGradient;
  std::vector<int32_t> lengths;

  explicit RunArrays(const cellrt::Plan &plan) : plan(plan) {}

  /// Reads `file`; `required` false: a missing file is not an error.
  std::string read(const std::string &file, bool required,
                   std::optional<npy::Array> &array) {
    std::string path = pathIn(dir, file);
    if (!llvm::sys::fs::exists(path)) {
      if (required)
        return "missing array " + file + " in " + dir;
      return "";
    }
    array.emplace();
    std::string error = npy::readFile(path, *array);
    if (!error.empty())
      return error;
    return "";
  }

  std::string readFloat(const std::string &file, bool required,
                        std::map<std::string, npy::Array> &into,
                        const std::string &name) {
    std::optional<npy::Array> array;
    if (std::string error = read(file, required, array); !error.empty())
      return error;
    if (!array)
      return "";
    if (array->dtype != npy::DType::Float32)
      return file + ": expected float32 ('<f4') data";
    into[name] = std::move(*array);
    return "";
  }

  /// Binds a dimension expression's one unbound symbol from an extent.
  void bind(const cellc::DimExpr &expr, int64_t extent) {
    const auto &terms = expr.getTerms();
    std::vector<std::pair<std::string, int64_t>> unbound;
    int64_t known = expr.getConstant();
    for (const auto &[symbol, coefficient] : terms) {
      auto it = dims.find(symbol);
      if (it == dims.end())
        unbound.push_back({symbol, coefficient});
      else
        known += coefficient * it->second;
    }
    if (unbound.size() == 1 && (extent - known) % unbound[0].second == 0 &&
        (extent - known) / unbound[0].second > 0)
      dims[unbound[0].first] = (extent - known) / unbound[0].second;
  }

  std::vector<int64_t> evaluate(const std::vector<cellc::DimExpr> &exprs) {
    std::vector<int64_t> extents;
    for (const cellc::DimExpr &expr : exprs)
      extents.push_back(expr.evaluate(dims).value_or(-1));
    return extents;
  }

  static std::string symbolic(const std::vector<cellc::DimExpr> &exprs) {
    std::string text = "[";
    for (size_t i = 0; i < exprs.size(); ++i)
      text += (i ? ", " : "") + exprs[i].str();
    return text + "]";
  }

  /// An error unless `array` has `expected` (shown as `symbolicText`).
  static std::string checkShape(const std::string &file,
                                const std::string &what,
                                const npy::Array &array,
                                const std::vector<int64_t> &expected,
                                const std::string &symbolicText) {
    if (array.shape == expected)
      return "";
    return file + ": shape " + shapeString(array.shape) + " does not match " +
           what + " " + symbolicText + " = " + shapeString(expected);
  }

  std::string readAll() {
    // Inputs give T and B; every array then binds the dims it mentions.
    if (plan.inputs.empty())
      return "cell '" + plan.cellName + "' has no inputs";
    for (const cellrt::VectorDecl &input : plan.inputs)
      if (auto e =
              readFloat("x_" + input.name + ".npy", true, inputs, input.name);
          !e.empty())
        return e;
    if (std::string e = readParams(); !e.empty())
      return e;
    for (const cellrt::VectorDecl &state : plan.states) {
      if (auto e = readFloat("init_" + state.name + ".npy", false,
                             initialStates, state.name);
          !e.empty())
        return e;
      if (auto e = readFloat("dfinal_" + state.name + ".npy", false,
                             finalStateGradients, state.name);
          !e.empty())
        return e;
    }
    std::optional<npy::Array> dout;
    if (auto e = read("dout.npy", false, dout); !e.empty())
      return e;
    if (dout && dout->dtype != npy::DType::Float32)
      return "dout.npy: expected float32 ('<f4') data";
    outputGradient = std::move(dout);

    const npy::Array &first = inputs[plan.inputs[0].name];
    std::string firstFile = "x_" + plan.inputs[0].name + ".npy";
    if (first.shape.size() != 3)
      return firstFile + ": shape " + shapeString(first.shape) +
             " does not match input " + plan.inputs[0].name + " [T, B, " +
             plan.inputs[0].length.str() + "]";
    T = first.shape[0];
    B = first.shape[1];
    for (const cellrt::VectorDecl &input : plan.inputs)
      if (inputs[input.name].shape.size() == 3)
        bind(input.length, inputs[input.name].shape[2]);
    for (const cellrt::ParamDecl &param : plan.params)
      if (!isDrawn(param.name) &&
          params[param.name].shape.size() == param.shape.size())
        for (size_t i = 0; i < param.shape.size(); ++i)
          bind(param.shape[i], params[param.name].shape[i]);
    for (const cellrt::VectorDecl &state : plan.states)
      if (auto it = initialStates.find(state.name);
          it != initialStates.end() && it->second.shape.size() == 2)
        bind(state.length, it->second.shape[1]);

    // A leading [T, B] or [B] in front of a vector's length.
    auto withTB = [&](const cellc::DimExpr &length) {
      return std::vector<int64_t>{T, B, length.evaluate(dims).value_or(-1)};
    };
    auto withB = [&](const cellc::DimExpr &length) {
      return std::vector<int64_t>{B, length.evaluate(dims).value_or(-1)};
    };
    auto textTB = [](const cellc::DimExpr &length) {
      return "[T, B, " + length.str() + "]";
    };
    auto textB = [](const cellc::DimExpr &length) {
      return "[B, " + length.str() + "]";
    };
    for (const cellrt::VectorDecl &input : plan.inputs)
      if (auto e = checkShape("x_" + input.name + ".npy", "input " + input.name,
                              inputs[input.name], withTB(input.length),
                              textTB(input.length));
          !e.empty())
        return e;
    for (const cellrt::ParamDecl &param : plan.params)
      if (isDrawn(param.name))
        continue;
      else if (auto e =
                   checkShape(paramSource(param.name), "param " + param.name,
                              params[param.name], evaluate(param.shape),
                              symbolic(param.shape));
               !e.empty())
        return e;
    for (const cellrt::VectorDecl &state : plan.states) {
      if (auto it = initialStates.find(state.name); it != initialStates.end())
        if (auto e = checkShape("init_" + state.name + ".npy",
                                "initial state " + state.name, it->second,
                                withB(state.length), textB(state.length));
            !e.empty())
          return e;
      if (auto it = finalStateGradients.find(state.name);
          it != finalStateGradients.end())
        if (auto e =
                checkShape("dfinal_" + state.name + ".npy",
                           "final state gradient " + state.name, it->second,
                           withB(state.length), textB(state.length));
            !e.empty())
          return e;
    }
    if (outputGradient)
      if (auto e =
              checkShape("dout.npy", "output gradient", *outputGradient,
                         withTB(plan.outputWidth), textTB(plan.outputWidth));
          !e.empty())
        return e;
    for (const std::string &dim : plan.dims)
      if (!dims.count(dim))
        return "cannot tell the size of dimension " + dim +
               " from the arrays in " + dir +
               (drawn.empty() ? ""
                              : " (drawn params give no sizes: pass --dim " +
                                    dim + "=N, or an array that has it)");
    return readLengths();
  }

  /// Where param `name` comes from, for messages.
  std::string paramSource(const std::string &name) const {
    if (paramsArchive.empty())
      return "param_" + name + ".npy";
    return paramsArchive + ": entry " + name;
  }

  /// The params: param_<name>.npy files, or every param from one .npz
  /// archive (entries named as the params, as CellModule.save_params and
  /// np.savez(path, W=..., b=...) write them), never both.
  std::string readParams() {
    if (paramsArchive.empty()) {
      for (const cellrt::ParamDecl &param : plan.params) {
        if (drawMissing &&
            !llvm::sys::fs::exists(pathIn(dir, paramSource(param.name)))) {
          drawn.push_back(param.name);
          continue;
        }
        if (auto e = readFloat(paramSource(param.name), true, params,
                               param.name);
            !e.empty())
          return e;
      }
      return "";
    }
    for (const cellrt::ParamDecl &param : plan.params)
      if (llvm::sys::fs::exists(pathIn(dir, "param_" + param.name + ".npy")))
        return "param_" + param.name + ".npy and " + paramsArchive +
               " both give params: keep one";
    if (std::string e = npy::readArchive(paramsArchive, params); !e.empty())
      return e;
    for (const auto &[name, array] : params) {
      if (!plan.findParam(name))
        return paramSource(name) + ": cell '" + plan.cellName +
               "' has no such param";
      if (array.dtype != npy::DType::Float32)
        return paramSource(name) + ": expected float32 ('<f4') data";
    }
    for (const cellrt::ParamDecl &param : plan.params)
      if (!params.count(param.name) && drawMissing)
        drawn.push_back(param.name);
      else if (!params.count(param.name))
        return paramsArchive + ": no entry for param " + param.name + " " +
               symbolic(param.shape);
    return "";
  }

  bool isDrawn(const std::string &name) const {
    return std::find(drawn.begin(), drawn.end(), name) != drawn.end();
  }

  std::string readLengths() {
    std::optional<npy::Array> array;
    if (auto e = read("lengths.npy", false, array); !e.empty())
      return e;
    if (!array) {
      lengths.assign(B, static_cast<int32_t>(T));
      return "";
    }
    if (array->dtype == npy::DType::Float32)
      return "lengths.npy: expected int32 ('<i4') or int64 ('<i8') data";
    if (array->shape != std::vector<int64_t>{B})
      return "lengths.npy: shape " + shapeString(array->shape) +
             " does not match lengths [B] = " + shapeString({B});
    for (int64_t b = 0; b < B; ++b) {
      int64_t length = array->ints[b];
      if (length < 1 || length > T)
        return "lengths.npy: lengths[" + std::to_string(b) +
               "] = " + std::to_string(length) + " is outside 1.." +
               std::to_string(T);
      lengths.push_back(static_cast<int32_t>(length));
    }
    return "";
  }

  /// Scans the directory for x_/param_/init_/dfinal_ files the cell does not
  /// declare: a misspelt optional array would otherwise be ignored.
  std::string checkUnknownFiles() {
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
         it.increment(ec)) {
      llvm::StringRef file = llvm::sys::path::filename(it->path());
      if (!file.endswith(".npy"))
        continue;
      llvm::StringRef stem = file.drop_back(4);
      auto unknown = [&](llvm::StringRef prefix, auto find) {
        return stem.startswith(prefix) &&
               !find(stem.drop_front(prefix.size()).str());
      };
      auto isInput = [&](const std::string &n) { return plan.findInput(n); };
      auto isParam = [&](const std::string &n) { return plan.findParam(n); };
      auto isState = [&](const std::string &n) { return plan.findState(n); };
      if (unknown("x_", isInput) || unknown("param_", isParam) ||
          unknown("init_", isState) || unknown("dfinal_", isState))
        return file.str() + ": cell '" + plan.cellName +
               "' has no such input, param or state";
    }
    return "";
  }
};

std::string writeArray(const std::string &dir, const std::string &file,
                       const std::vector<int64_t> &shape,
                       const std::vector<float> &data, llvm::raw_ostream &log) {
  std::string path = pathIn(dir, file);
  std::string error = npy::writeFile(path, shape, data.data());
  if (error.empty())
    log << "wrote " << path << " " << shapeString(shape) << "\n";
  return error;
}

/// grad_param_<name>.npy per param, or grad_params.npz when the params
/// came from an archive.
std::string
writeParamGradients(const std::string &dir, RunArrays &arrays,
                    std::map<std::string, std::vector<float>> &gradients,
                    llvm::raw_ostream &log) {
  if (arrays.paramsArchive.empty()) {
    for (const cellrt::ParamDecl &param : arrays.plan.params)
      if (std::string e = writeArray(dir, "grad_param_" + param.name + ".npy",
                                     arrays.params[param.name].shape,
                                     gradients[param.name], log);
          !e.empty())
        return e;
    return "";
  }
  std::map<std::string, npy::ArchiveEntry> entries;
  for (const cellrt::ParamDecl &param : arrays.plan.params)
    entries[param.name] = {arrays.params[param.name].shape,
                           gradients[param.name].data()};
  std::string path = pathIn(dir, "grad_params.npz");
  std::string error = npy::writeArchive(path, entries);
  if (error.empty())
    log << "wrote " << path << " (" << entries.size() << " arrays)\n";
  return error;
}

int64_t product(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

/// Draws the params the directory does not give (--init-seed) and writes
/// them to drawn_params.npz, so that a run can be repeated with them.
std::string drawMissingParams(const cellrt::Cell &cell, RunArrays &arrays,
                              const RunOptions &options,
                              llvm::raw_ostream &log) {
  std::map<std::string, cellrt::MutableArray> targets;
  std::map<std::string, npy::ArchiveEntry> entries;
  for (const std::string &name : arrays.drawn) {
    npy::Array &array = arrays.params[name];
    array.dtype = npy::DType::Float32;
    array.shape = arrays.evaluate(arrays.plan.findParam(name)->shape);
    array.floats.assign(product(array.shape), 0.0f);
    targets[name] = {array.floats.data(), array.shape};
    entries[name] = {array.shape, array.floats.data()};
  }
  if (targets.empty())
    return "";
  cellrt::Status status =
      cell.initParams(targets, *options.initSeed, options.initFallback);
  if (!status.ok())
    return status.message();
  for (const std::string &name : arrays.drawn) {
    const cellrt::InitScheme &init = arrays.plan.findParam(name)->init;
    log << "drew param " << name << " "
        << shapeString(arrays.params[name].shape) << " from seed "
        << *options.initSeed << ": "
        << (init.isNone() ? options.initFallback.str() + " (fallback)"
                          : init.str())
        << "\n";
  }
  std::string path = pathIn(options.dir, "drawn_params.npz");
  std::string error = npy::writeArchive(path, entries);
  if (error.empty())
    log << "wrote " << path << " (" << entries.size() << " arrays)\n";
  return error;
}

} // namespace

std::string cellc::parseRunArguments(int argc, char **argv,
                                     RunOptions &options) {
  bool fallbackGiven = false;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    // `--opt VALUE` and `--opt=VALUE` (one or two dashes) alike.
    auto value = [&](llvm::StringRef name, std::string &into) {
      for (llvm::StringRef dashes : {"--", "-"}) {
        std::string flag = (dashes + name).str();
        if (arg == flag) {
          if (i + 1 >= argc)
            return std::string("missing value after ") + flag;
          into = argv[++i];
          return std::string("ok");
        }
        if (arg.startswith(flag + "=")) {
          into = arg.drop_front(flag.size() + 1).str();
          return std::string("ok");
        }
      }
      return std::string();
    };
    std::string text;
    std::string result;
    if (!(result = value("cell", options.cellName)).empty() ||
        !(result = value("dir", options.dir)).empty() ||
        !(result = value("device", options.device)).empty() ||
        !(result = value("object", options.objectFile)).empty() ||
        !(result = value("params", options.paramsFile)).empty()) {
      if (result != "ok")
        return result;
      continue;
    }
    if (!(result = value("init-seed", text)).empty()) {
      if (result != "ok")
        return result;
      uint64_t seed;
      if (llvm::StringRef(text).getAsInteger(10, seed))
        return "--init-seed expects an integer from 0 to 2^64-1, got '" + text +
               "'";
      options.initSeed = seed;
      continue;
    }
    if (!(result = value("init-fallback", text)).empty()) {
      if (result != "ok")
        return result;
      fallbackGiven = true;
      if (std::optional<cellrt::InitScheme> scheme =
              cellrt::InitScheme::parseWritten(text))
        options.initFallback = *scheme;
      else
        return "--init-fallback expects fan_in, fan_out, orthogonal, "
               "uniform(A), normal(S), constant(C) or none, got '" +
               text + "'";
      continue;
    }
    if (!(result = value("probe", text)).empty()) {
      if (result != "ok")
        return result;
      llvm::SmallVector<llvm::StringRef> names;
      llvm::StringRef(text).split(names, ',', -1, /*KeepEmpty=*/false);
      for (llvm::StringRef name : names)
        options.probes.push_back(name.str());
      continue;
    }
    if (!(result = value("dim", text)).empty()) {
      if (result != "ok")
        return result;
      auto [name, number] = llvm::StringRef(text).split('=');
      int64_t dimValue;
      if (name.empty() || number.getAsInteger(10, dimValue) || dimValue <= 0)
        return "--dim expects NAME=POSITIVE_INTEGER, got '" + text + "'";
      options.fixedDims[name.str()] = dimValue;
      continue;
    }
    if (arg == "--reverse" || arg == "-reverse") {
      options.reverse = true;
    } else if (arg == "--no-cache" || arg == "-no-cache") {
      options.cacheDir = "";
    } else if (arg.startswith("-")) {
      return "unknown option '" + arg.str() + "'";
    } else if (options.cellFile.empty()) {
      options.cellFile = arg.str();
    } else {
      return "more than one input file ('" + options.cellFile + "', '" +
             arg.str() + "')";
    }
  }
  if (options.cellFile.empty())
    return "no input .cell file";
  if (fallbackGiven && !options.initSeed)
    return "--init-fallback needs --init-seed N";
  if (options.dir.empty())
    return "--dir D is required";
  if (options.device != "auto" && options.device != "cpu" &&
      options.device != "gpu")
    return "--device must be auto, cpu or gpu, not '" + options.device + "'";
  return "";
}

namespace {

/// The cell compiled ahead of time into the shared library `path`: its
/// plan and kernel table symbols, as the generated header names them.
cellrt::Expected<cellrt::Cell> loadFromObject(const std::string &path,
                                              const std::string &cellName) {
  if (cellName.empty())
    return cellrt::Status::error("--object needs --cell NAME");
  std::string error;
  auto library =
      llvm::sys::DynamicLibrary::getPermanentLibrary(path.c_str(), &error);
  if (!library.isValid())
    return cellrt::Status::error(path + ": " + error);
  auto symbol = [&](const char *suffix) {
    return library.getAddressOfSymbol(
        ("cellc_" + cellName + suffix).c_str());
  };
  auto *plan = static_cast<const char *>(symbol("_plan"));
  auto *kernels = static_cast<const cellrt_kernel_fn *>(symbol("_kernels"));
  auto *names = static_cast<const char *const *>(symbol("_kernel_names"));
  auto *count = static_cast<const int64_t *>(symbol("_num_kernels"));
  if (!plan || !kernels || !names || !count)
    return cellrt::Status::error(path + ": no cell '" + cellName +
                                 "' (cellc_" + cellName + "_plan is missing)");
  return cellrt::Cell::load(cellrt_image{plan, kernels, names, *count});
}

/// The compiled cell on the device `options.device` asks for: `auto` takes
/// the GPU when a driver and GPU are there, else the CPU. `keep` holds the
/// CPU's JIT-compiled code, which must outlive the cell.
cellrt::Expected<cellrt::Cell>
loadOnDevice(const RunOptions &options,
             const jit::CompileOptions &compileOptions,
             std::optional<jit::CompiledCell> &keep, llvm::raw_ostream &log) {
  if (!options.objectFile.empty())
    return loadFromObject(options.objectFile, options.cellName);
  std::string cpuReason;
  if (options.device != "cpu") {
#ifdef CELLC_HAS_CUDA
    cellrt::Status gpu = cellrt::cuda::available();
    if (gpu.ok()) {
      auto code = jit::compileFileForGPU(options.cellFile, compileOptions);
      if (!code)
        return code.getStatus();
      auto cell = cellrt::cuda::loadCell(code->tables, code->ptx);
      if (cell)
        log << "device: gpu\n";
      return cell;
    }
    cpuReason = gpu.message();
#else
    cpuReason = "cellc was built without the CUDA backend (no CUDA headers "
                "at build time); use --device cpu";
#endif
    if (options.device == "gpu")
      return cellrt::Status::error(cpuReason);
  }
  auto compiled = jit::compileFile(options.cellFile, compileOptions);
  if (!compiled)
    return compiled.getStatus();
  keep.emplace(std::move(*compiled));
  auto cell = cellrt::Cell::load(keep->image());
  if (cell)
    log << "device: cpu" << (cpuReason.empty() ? "" : " (" + cpuReason + ")")
        << "\n";
  return cell;
}

/// probe_NAME.npy; a new state's `h'` becomes probe_h_next.npy (no quote
/// in file names).
std::string probeFileName(llvm::StringRef name) {
  std::string file = "probe_" + name.str();
  if (name.endswith("'"))
    file = file.substr(0, file.size() - 1) + "_next";
  return file + ".npy";
}

} // namespace

std::string cellc::runOnDirectory(const RunOptions &options,
                                  llvm::raw_ostream &log) {
  jit::CompileOptions compileOptions;
  compileOptions.cellName = options.cellName;
  compileOptions.fixedDims = options.fixedDims;
  compileOptions.cacheDir = options.cacheDir;
  compileOptions.probes = options.probes;
  if (!llvm::sys::fs::is_directory(options.dir))
    return options.dir + ": not a directory";
  std::optional<jit::CompiledCell> compiled;
  auto cell = loadOnDevice(options, compileOptions, compiled, log);
  if (!cell)
    return cell.error();
  const cellrt::Plan &plan = cell->getPlan();

  RunArrays arrays(plan);
  arrays.dir = options.dir;
  arrays.paramsArchive = options.paramsFile;
  arrays.drawMissing = options.initSeed.has_value();
  if (arrays.paramsArchive.empty() &&
      llvm::sys::fs::exists(pathIn(options.dir, "params.npz")))
    arrays.paramsArchive = pathIn(options.dir, "params.npz");
  if (std::string e = arrays.checkUnknownFiles(); !e.empty())
    return e;
  if (std::string e = arrays.readAll(); !e.empty())
    return e;
  if (std::string e = drawMissingParams(*cell, arrays, options, log);
      !e.empty())
    return e;
  const int64_t T = arrays.T, B = arrays.B;
  auto extent = [&](const cellc::DimExpr &expr) {
    return *expr.evaluate(arrays.dims);
  };

  cellrt::ForwardArgs args;
  args.lengths = arrays.lengths.data();
  args.reverse = options.reverse;
  for (const cellrt::VectorDecl &input : plan.inputs) {
    const npy::Array &array = arrays.inputs[input.name];
    args.inputs.push_back({array.floats.data(), array.shape});
  }
  for (const cellrt::ParamDecl &param : plan.params) {
    const npy::Array &array = arrays.params[param.name];
    args.params[param.name] = {array.floats.data(), array.shape};
  }
  std::map<std::string, std::vector<float>> finals;
  for (const cellrt::VectorDecl &state : plan.states) {
    auto it = arrays.initialStates.find(state.name);
    args.initialStates.push_back(
        it == arrays.initialStates.end()
            ? cellrt::ConstArray{}
            : cellrt::ConstArray{it->second.floats.data(), it->second.shape});
    std::vector<float> &final = finals[state.name];
    final.assign(B * extent(state.length), 0.0f);
    args.finalStates.push_back({final.data(), {B, extent(state.length)}});
  }
  std::vector<int64_t> outShape = {T, B, extent(plan.outputWidth)};
  std::vector<float> out(product(outShape), 0.0f);
  args.output = {out.data(), outShape};
  std::vector<std::vector<float>> probed;
  for (const cellrt::VectorDecl &probe : plan.probes)
    probed.emplace_back(T * B * extent(probe.length), 0.0f);
  for (size_t i = 0; i < probed.size(); ++i)
    args.probes.push_back(
        {probed[i].data(), {T, B, extent(plan.probes[i].length)}});

  bool training =
      arrays.outputGradient.has_value() || !arrays.finalStateGradients.empty();
  std::map<std::string, std::vector<float>> inputGrads, paramGrads, initGrads;
  if (!training) {
    if (cellrt::Status status = cell->forward(args); !status.ok())
      return status.message();
  } else {
    if (!cell->hasBackward())
      return "backward is unavailable: the plan of cell '" + plan.cellName +
             "' has no backward directives";
    cellrt::Tape tape;
    if (cellrt::Status status = cell->forward(args, tape); !status.ok())
      return status.message();
    cellrt::BackwardArgs grads;
    if (arrays.outputGradient)
      grads.outputGradient = {arrays.outputGradient->floats.data(),
                              arrays.outputGradient->shape};
    for (const cellrt::VectorDecl &state : plan.states) {
      auto it = arrays.finalStateGradients.find(state.name);
      grads.finalStateGradients.push_back(
          it == arrays.finalStateGradients.end()
              ? cellrt::ConstArray{}
              : cellrt::ConstArray{it->second.floats.data(), it->second.shape});
      std::vector<float> &grad = initGrads[state.name];
      grad.assign(B * extent(state.length), 0.0f);
      grads.initialStateGradients.push_back(
          {grad.data(), {B, extent(state.length)}});
    }
    for (const cellrt::VectorDecl &input : plan.inputs) {
      std::vector<float> &grad = inputGrads[input.name];
      grad.assign(T * B * extent(input.length), 0.0f);
      grads.inputGradients.push_back(
          {grad.data(), {T, B, extent(input.length)}});
    }
    for (const cellrt::ParamDecl &param : plan.params) {
      const npy::Array &value = arrays.params[param.name];
      std::vector<float> &grad = paramGrads[param.name];
      grad.assign(value.floats.size(), 0.0f);
      grads.paramGradients[param.name] = {grad.data(), value.shape};
    }
    if (cellrt::Status status = cell->backward(args, grads, tape); !status.ok())
      return status.message();
  }

  if (std::string e = writeArray(options.dir, "out.npy", outShape, out, log);
      !e.empty())
    return e;
  for (const cellrt::VectorDecl &state : plan.states)
    if (std::string e =
            writeArray(options.dir, "final_" + state.name + ".npy",
                       {B, extent(state.length)}, finals[state.name], log);
        !e.empty())
      return e;
  for (size_t i = 0; i < probed.size(); ++i)
    if (std::string e = writeArray(
            options.dir, probeFileName(plan.probes[i].name),
            {T, B, extent(plan.probes[i].length)}, probed[i], log);
        !e.empty())
      return e;
  if (!training)
    return "";
  for (const cellrt::VectorDecl &input : plan.inputs)
    if (std::string e = writeArray(options.dir, "grad_x_" + input.name + ".npy",
                                   {T, B, extent(input.length)},
                                   inputGrads[input.name], log);
        !e.empty())
      return e;
  if (std::string e = writeParamGradients(options.dir, arrays, paramGrads,
                                          log);
      !e.empty())
    return e;
  for (const cellrt::VectorDecl &state : plan.states)
    if (std::string e =
            writeArray(options.dir, "grad_init_" + state.name + ".npy",
                       {B, extent(state.length)}, initGrads[state.name], log);
        !e.empty())
      return e;
  return "";
}

int cellc::runCommand(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (llvm::StringRef(argv[i]) == "--help" ||
        llvm::StringRef(argv[i]) == "-h") {
      llvm::outs() << kUsage << "\n";
      return 0;
    }
  RunOptions options;
  if (std::string error = parseRunArguments(argc, argv, options);
      !error.empty()) {
    llvm::errs() << "cellc run: error: " << error << "\n" << kUsage << "\n";
    return 1;
  }
  std::string error = runOnDirectory(options, llvm::outs());
  if (error.empty())
    return 0;
  // Front-end diagnostics already read `file:line:col: error: ...`.
  if (llvm::StringRef(error).contains(": error: "))
    llvm::errs() << error;
  else
    llvm::errs() << "cellc run: error: " << error << "\n";
  if (!error.empty() && error.back() != '\n' &&
      llvm::StringRef(error).contains(": error: "))
    llvm::errs() << "\n";
  return 1;
}
