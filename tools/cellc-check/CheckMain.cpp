//===- CheckMain.cpp - cellc-check: a compiled cell against a reference ---===//
//
// cellc-check FILE.cell [--cell NAME] [--dim N=V]... [--seed N] [--no-cache]
//             [--inference-only] [--fd-points N] [--probe NAME,...]
//             [--params P.npz] [--steps T] [--batch B]
// (usually run as `cellc check ...`)
//
// JIT-compiles the cell, runs it through cellrt on random batches (two size
// sets, both time directions, ragged lengths; or the params of P.npz and
// the sizes their shapes bind) forward and backward, and
// compares outputs, final states and the gradients of
//   L = sum(out * dout) + sum_s sum(final_s * dfinal_s)
// with respect to every input, initial state and param against a float64
// LibTorch interpreter of the cell's AST (Reference.h). Central finite
// differences of that interpreter check its autograd at a few coordinates
// of every array. Prints a table; exits 1 if anything is out of tolerance.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Runtime.h"
#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Frontend.h"
#include "jit/Jit.h"
#include "tools/cellc-check/Compare.h"
#include "tools/cellc-check/Params.h"
#include "tools/cellc-check/Reference.h"
#include "codegen/Registration.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

using namespace cellc;
using namespace cellc::check;
namespace cl = llvm::cl;

static cl::OptionCategory checkCategory("cellc check options");

namespace {

cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input .cell>"),
                                   cl::Required, cl::cat(checkCategory));
cl::opt<std::string> cellName("cell", cl::desc("The cell to check"),
                              cl::value_desc("name"), cl::cat(checkCategory));
cl::list<std::string> dimBindings("dim", cl::desc("Fix a symbolic dimension"),
                                  cl::value_desc("N=V"), cl::cat(checkCategory));
cl::opt<unsigned> seed("seed", cl::desc("Random seed"), cl::init(1), cl::cat(checkCategory));
cl::opt<bool> noCache("no-cache", cl::desc("Do not use the JIT's disk cache"),
                      cl::init(false), cl::cat(checkCategory));
cl::opt<bool> inferenceOnly(
    "inference-only",
    cl::desc("Compile without the backward pass and check forward only"),
    cl::init(false), cl::cat(checkCategory));
cl::list<std::string>
    probes("probe",
           cl::desc("Compile with these probes (cellc --probe) and check "
                    "each probe array against the reference's value"),
           cl::value_desc("name"), cl::CommaSeparated, cl::cat(checkCategory));
cl::opt<int>
    finiteDifferencePoints("fd-points",
                           cl::desc("Finite-difference coordinates per array"),
                           cl::init(3), cl::cat(checkCategory));
cl::opt<std::string> paramsFile(
    "params",
    cl::desc("Run every configuration on these params (float32 arrays "
             "named as the cell's); their shapes bind the dimensions"),
    cl::value_desc("file.npz"), cl::cat(checkCategory));
cl::opt<int> stepsOption("steps",
                         cl::desc("Sequence length T of every configuration "
                                  "(default: 5 small, 9 medium)"),
                         cl::value_desc("T"), cl::init(0),
                         cl::cat(checkCategory));
cl::opt<int> batchOption("batch",
                         cl::desc("Batch size B of every configuration "
                                  "(default: 3 small, 4 medium)"),
                         cl::value_desc("B"), cl::init(0),
                         cl::cat(checkCategory));

/// One random batch configuration.
struct RunConfig {
  std::string name;
  int64_t minDim, maxDim;
  int64_t T, B;
  bool reverse;
};

/// The outcome of all runs.
struct Summary {
  int comparisons = 0;
  int failures = 0;
  bool backwardChecked = true;
  std::string backwardUnavailable;
};

std::vector<float> randomFloats(std::mt19937 &rng, int64_t count) {
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  std::vector<float> values(count);
  for (float &value : values)
    value = uniform(rng);
  return values;
}

std::vector<double> toDouble(const std::vector<float> &values) {
  return std::vector<double>(values.begin(), values.end());
}

/// The largest |value| over every gradient of `reference`: the scale that
/// near-zero gradients are measured against (kGradientFloorFraction).
double largestGradient(const Evaluation &reference) {
  double largest = 0;
  for (const auto *gradients :
       {&reference.inputGradients, &reference.initialStateGradients,
        &reference.paramGradients})
    for (const auto &[name, values] : *gradients)
      for (double value : values)
        largest = std::max(largest, std::fabs(value));
  return largest;
}

int64_t product(const std::vector<int64_t> &shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

/// Distinct values in [lo, hi] for every plan dim (repeating only when
/// there are more dims than values).
std::map<std::string, int64_t> chooseSizes(const cellrt::Plan &plan, int64_t lo,
                                           int64_t hi, std::mt19937 &rng) {
  std::vector<int64_t> pool(hi - lo + 1);
  std::iota(pool.begin(), pool.end(), lo);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::map<std::string, int64_t> sizes;
  for (size_t i = 0; i < plan.dims.size(); ++i)
    sizes[plan.dims[i]] = pool[i % pool.size()];
  return sizes;
}

/// Ragged lengths: the first is T, the second 1, the rest random.
std::vector<int32_t> chooseLengths(int64_t T, int64_t B, std::mt19937 &rng) {
  std::uniform_int_distribution<int32_t> uniform(1, static_cast<int32_t>(T));
  std::vector<int32_t> lengths(B);
  for (int64_t b = 0; b < B; ++b)
    lengths[b] = b == 0 ? T : b == 1 ? 1 : uniform(rng);
  return lengths;
}

int64_t evaluate(const cellc::DimExpr &dim,
                 const std::map<std::string, int64_t> &sizes) {
  return dim.evaluate(sizes).value_or(-1);
}

/// Everything one run feeds cellrt and the reference, and what cellrt gives.
struct RunData {
  Batch batch;
  std::map<std::string, std::vector<float>> inputs, initialStates, params;
  std::vector<float> outputGradient;
  std::map<std::string, std::vector<float>> finalStateGradients;
  std::map<std::string, std::vector<int64_t>> paramShapes;
  int64_t outputWidth = 0;
  /// One per plan probe.
  std::vector<int64_t> probeWidths;
};

/// cellrt's results, widened to float64.
struct RuntimeResult {
  std::vector<double> output;
  std::map<std::string, std::vector<double>> probes;
  std::map<std::string, std::vector<double>> finalStates, inputGradients,
      initialStateGradients, paramGradients;
};

/// Random inputs, initial states and lengths for `config`.
void makeInputs(const cellrt::Plan &plan,
                const std::map<std::string, int64_t> &sizes,
                const RunConfig &config, std::mt19937 &rng, RunData &data) {
  Batch &batch = data.batch;
  batch.T = config.T;
  batch.B = config.B;
  batch.reverse = config.reverse;
  batch.lengths = chooseLengths(config.T, config.B, rng);
  const int64_t T = config.T, B = config.B;
  for (const cellrt::VectorDecl &input : plan.inputs) {
    data.inputs[input.name] =
        randomFloats(rng, T * B * evaluate(input.length, sizes));
    batch.inputs[input.name] = toDouble(data.inputs[input.name]);
  }
  for (const cellrt::VectorDecl &state : plan.states) {
    int64_t length = evaluate(state.length, sizes);
    data.initialStates[state.name] = randomFloats(rng, B * length);
    batch.initialStates[state.name] = toDouble(data.initialStates[state.name]);
    data.finalStateGradients[state.name] = randomFloats(rng, B * length);
    batch.finalStateGradients[state.name] =
        toDouble(data.finalStateGradients[state.name]);
  }
}

/// The params: `given`'s values where there are some, else random.
void makeParams(const cellrt::Plan &plan,
                const std::map<std::string, int64_t> &sizes,
                const GivenParams *given, std::mt19937 &rng, RunData &data) {
  for (const cellrt::ParamDecl &param : plan.params) {
    std::vector<int64_t> shape;
    for (const cellc::DimExpr &dim : param.shape)
      shape.push_back(evaluate(dim, sizes));
    data.paramShapes[param.name] = shape;
    data.params[param.name] = given ? given->values.at(param.name)
                                    : randomFloats(rng, product(shape));
    data.batch.params[param.name] = toDouble(data.params[param.name]);
  }
}

/// One run's data; only the params come from `given` when it is set (the
/// random draws of inputs, states and gradients stay those of --seed).
RunData makeData(const cellrt::Plan &plan,
                 const std::map<std::string, int64_t> &sizes,
                 const RunConfig &config, const GivenParams *given,
                 std::mt19937 &rng) {
  RunData data;
  makeInputs(plan, sizes, config, rng, data);
  makeParams(plan, sizes, given, rng, data);
  data.outputWidth = evaluate(plan.outputWidth, sizes);
  data.outputGradient =
      randomFloats(rng, config.T * config.B * data.outputWidth);
  data.batch.outputGradient = toDouble(data.outputGradient);
  for (const cellrt::VectorDecl &probe : plan.probes) {
    data.batch.probes.push_back(probe.name);
    data.probeWidths.push_back(evaluate(probe.length, sizes));
  }
  return data;
}

/// Runs cellrt forward (and backward when `backward` is set; it is cleared
/// with the reason in `unavailable` if the runtime cannot).
cellrt::Status runRuntime(const cellrt::Cell &cell, RunData &data,
                          bool &backward, std::string &unavailable,
                          RuntimeResult &result) {
  const cellrt::Plan &plan = cell.getPlan();
  const int64_t T = data.batch.T, B = data.batch.B;
  cellrt::ForwardArgs args;
  args.lengths = data.batch.lengths.data();
  args.reverse = data.batch.reverse;
  std::map<std::string, std::vector<float>> finals;
  for (const cellrt::VectorDecl &input : plan.inputs) {
    const auto &values = data.inputs[input.name];
    args.inputs.push_back(
        {values.data(), {T, B, static_cast<int64_t>(values.size()) / (T * B)}});
  }
  for (const cellrt::VectorDecl &state : plan.states) {
    const auto &values = data.initialStates[state.name];
    int64_t length = static_cast<int64_t>(values.size()) / B;
    args.initialStates.push_back({values.data(), {B, length}});
    finals[state.name].assign(B * length, 0.0f);
    args.finalStates.push_back({finals[state.name].data(), {B, length}});
  }
  for (const cellrt::ParamDecl &param : plan.params)
    args.params[param.name] = {data.params[param.name].data(),
                               data.paramShapes[param.name]};
  std::vector<float> output(T * B * data.outputWidth, 0.0f);
  args.output = {output.data(), {T, B, data.outputWidth}};
  std::vector<std::vector<float>> probed;
  for (int64_t width : data.probeWidths)
    probed.emplace_back(T * B * width, 0.0f);
  for (size_t i = 0; i < probed.size(); ++i)
    args.probes.push_back({probed[i].data(), {T, B, data.probeWidths[i]}});

  cellrt::Tape tape;
  cellrt::Status status =
      backward ? cell.forward(args, tape) : cell.forward(args);
  if (!status.ok() && backward) {
    // Training-mode forward failed: say why and fall back to inference.
    backward = false;
    unavailable = status.message();
    status = cell.forward(args);
  }
  if (!status.ok())
    return status;
  result.output = toDouble(output);
  for (size_t i = 0; i < probed.size(); ++i)
    result.probes[data.batch.probes[i]] = toDouble(probed[i]);
  for (auto &[name, values] : finals)
    result.finalStates[name] = toDouble(values);
  if (!backward)
    return cellrt::Status::success();

  cellrt::BackwardArgs grads;
  std::map<std::string, std::vector<float>> dInputs, dInits, dParams;
  grads.outputGradient = {data.outputGradient.data(), {T, B, data.outputWidth}};
  for (const cellrt::VectorDecl &state : plan.states) {
    const auto &dfinal = data.finalStateGradients[state.name];
    int64_t length = static_cast<int64_t>(dfinal.size()) / B;
    grads.finalStateGradients.push_back({dfinal.data(), {B, length}});
    dInits[state.name].assign(B * length, 0.0f);
    grads.initialStateGradients.push_back(
        {dInits[state.name].data(), {B, length}});
  }
  for (const cellrt::VectorDecl &input : plan.inputs) {
    dInputs[input.name].assign(data.inputs[input.name].size(), 0.0f);
    grads.inputGradients.push_back(
        {dInputs[input.name].data(),
         args.inputs[grads.inputGradients.size()].shape});
  }
  for (const cellrt::ParamDecl &param : plan.params) {
    dParams[param.name].assign(data.params[param.name].size(), 0.0f);
    grads.paramGradients[param.name] = {dParams[param.name].data(),
                                        data.paramShapes[param.name]};
  }
  status = cell.backward(args, grads, tape);
  if (!status.ok()) {
    backward = false;
    unavailable = status.message();
    return cellrt::Status::success();
  }
  for (auto &[name, values] : dInputs)
    result.inputGradients[name] = toDouble(values);
  for (auto &[name, values] : dInits)
    result.initialStateGradients[name] = toDouble(values);
  for (auto &[name, values] : dParams)
    result.paramGradients[name] = toDouble(values);
  return cellrt::Status::success();
}

/// Central differences of the reference's loss at a few coordinates of
/// `array` (one of the batch's maps), compared with its autograd gradient.
Comparison
finiteDifferences(const ast::Cell &cell,
                  const std::map<std::string, int64_t> &sizes,
                  const Batch &batch, const std::string &label,
                  std::map<std::string, std::vector<double>> Batch::*arrays,
                  const std::string &name, const std::vector<double> &autograd,
                  double loss, bool isInput, std::mt19937 &rng) {
  Batch perturbed = batch;
  std::vector<double> &values = (perturbed.*arrays)[name];
  // Inputs: only coordinates at active steps carry a gradient worth checking.
  std::vector<size_t> candidates;
  int64_t width = isInput ? values.size() / (batch.T * batch.B) : 1;
  for (size_t i = 0; i < values.size(); ++i) {
    if (isInput) {
      int64_t t = i / (batch.B * width), b = (i / width) % batch.B;
      if (t >= batch.lengths[b])
        continue;
    }
    candidates.push_back(i);
  }
  std::shuffle(candidates.begin(), candidates.end(), rng);
  candidates.resize(
      std::min<size_t>(candidates.size(), finiteDifferencePoints));

  const double h = 1e-6;
  std::vector<double> numeric, analytic;
  // A difference quotient carries rounding of about eps * |loss| / h
  // (2e-10 |loss|), so gradients far below the loss's size are measured
  // against a floor of 1e-3 |loss| rather than against themselves.
  double scale = 1e-3 * std::max(1.0, std::fabs(loss));
  for (double g : autograd)
    scale = std::max(scale, std::fabs(g));
  std::vector<double> coarse;
  for (size_t index : candidates) {
    double saved = values[index];
    // Steps h and 2h: their gap bounds the finer one's truncation error.
    double quotients[2];
    for (int k = 0; k < 2; ++k) {
      double step = h * (k + 1);
      Evaluation plus, minus;
      values[index] = saved + step;
      std::string e1 = evaluateReference(cell, sizes, perturbed, false, plus);
      values[index] = saved - step;
      std::string e2 = evaluateReference(cell, sizes, perturbed, false, minus);
      values[index] = saved;
      if (!e1.empty() || !e2.empty()) {
        Comparison failed;
        failed.array = label;
        failed.note = e1.empty() ? e2 : e1;
        return failed;
      }
      quotients[k] = (plus.loss - minus.loss) / (2 * step);
    }
    numeric.push_back(quotients[0]);
    coarse.push_back(quotients[1]);
    analytic.push_back(autograd.at(index));
  }
  return compareDifferences(label, numeric, coarse, analytic,
                            kFiniteDifferenceTolerance, scale);
}

/// One configuration: data, cellrt, reference, finite differences, table.
bool runConfig(const ast::Cell &cell, const cellrt::Cell &compiled,
               const RunConfig &config, const GivenParams *given,
               std::mt19937 &rng, Summary &summary) {
  const cellrt::Plan &plan = compiled.getPlan();
  std::map<std::string, int64_t> sizes =
      chooseSizes(plan, config.minDim, config.maxDim, rng);
  if (given)
    for (const auto &[dim, value] : given->dims)
      sizes[dim] = value;
  RunData data = makeData(plan, sizes, config, given, rng);

  llvm::outs() << "[" << config.name << "]";
  for (const auto &[dim, value] : sizes)
    llvm::outs() << " " << dim << "=" << value;
  llvm::outs() << " T=" << config.T << " B=" << config.B << " lengths=";
  for (size_t b = 0; b < data.batch.lengths.size(); ++b)
    llvm::outs() << (b ? "," : "") << data.batch.lengths[b];
  llvm::outs() << (config.reverse ? " reverse" : " forward") << "\n";

  std::vector<Comparison> rows;
  auto fail = [&](const std::string &what, const std::string &message) {
    Comparison row;
    row.array = what;
    row.maxAbsError = row.maxRelError = INFINITY;
    row.note = message;
    rows.push_back(row);
  };
  // The plan and the AST must agree on every declaration's shape.
  for (const cellrt::ParamDecl &param : plan.params)
    if (declaredShape(cell, param.name, sizes) != data.paramShapes[param.name])
      fail("param_" + param.name, "plan and AST disagree on its shape");

  bool backward = summary.backwardChecked;
  RuntimeResult runtime;
  std::string unavailable;
  cellrt::Status status =
      runRuntime(compiled, data, backward, unavailable, runtime);
  if (!backward && summary.backwardChecked) {
    summary.backwardChecked = false;
    summary.backwardUnavailable = unavailable;
  }
  Evaluation reference, single;
  std::string referenceError =
      evaluateReference(cell, sizes, data.batch, true, reference);
  // The same equations in float32: how much this batch amplifies rounding.
  if (!evaluateReference(cell, sizes, data.batch, true, single,
                         /*singlePrecision=*/true)
           .empty())
    single = reference;
  if (!status.ok())
    fail("cellrt", status.message());
  if (!referenceError.empty())
    fail("reference", referenceError);

  if (status.ok() && referenceError.empty()) {
    rows.push_back(compareConditioned("out", runtime.output, reference.output,
                                      single.output, kForwardTolerance));
    for (const cellrt::VectorDecl &state : plan.states)
      rows.push_back(compareConditioned(
          "final_" + state.name, runtime.finalStates[state.name],
          reference.finalStates[state.name], single.finalStates[state.name],
          kForwardTolerance));
    for (const cellrt::VectorDecl &probe : plan.probes)
      rows.push_back(compareConditioned(
          "probe_" + probe.name, runtime.probes[probe.name],
          reference.probes[probe.name], single.probes[probe.name],
          kForwardTolerance));
    if (backward) {
      double floor = kGradientFloorFraction * largestGradient(reference);
      for (const cellrt::VectorDecl &input : plan.inputs)
        rows.push_back(compareConditioned(
            "grad_x_" + input.name, runtime.inputGradients[input.name],
            reference.inputGradients[input.name],
            single.inputGradients[input.name], kGradientTolerance, floor));
      for (const cellrt::VectorDecl &state : plan.states)
        rows.push_back(compareConditioned(
            "grad_init_" + state.name,
            runtime.initialStateGradients[state.name],
            reference.initialStateGradients[state.name],
            single.initialStateGradients[state.name], kGradientTolerance,
            floor));
      for (const cellrt::ParamDecl &param : plan.params)
        rows.push_back(compareConditioned(
            "grad_param_" + param.name, runtime.paramGradients[param.name],
            reference.paramGradients[param.name],
            single.paramGradients[param.name], kGradientTolerance, floor));
    }
    // The reference's autograd against its own finite differences.
    for (const cellrt::VectorDecl &input : plan.inputs)
      rows.push_back(finiteDifferences(
          cell, sizes, data.batch, "fd:grad_x_" + input.name, &Batch::inputs,
          input.name, reference.inputGradients[input.name], reference.loss, true, rng));
    for (const cellrt::VectorDecl &state : plan.states)
      rows.push_back(finiteDifferences(
          cell, sizes, data.batch, "fd:grad_init_" + state.name,
          &Batch::initialStates, state.name,
          reference.initialStateGradients[state.name], reference.loss, false,
          rng));
    for (const cellrt::ParamDecl &param : plan.params)
      rows.push_back(finiteDifferences(
          cell, sizes, data.batch, "fd:grad_param_" + param.name,
          &Batch::params, param.name, reference.paramGradients[param.name],
          reference.loss, false, rng));
  }

  llvm::outs() << formatHeader() << "\n";
  bool allPass = true;
  for (const Comparison &row : rows) {
    llvm::outs() << formatRow(row) << "\n";
    ++summary.comparisons;
    if (!row.pass) {
      ++summary.failures;
      allPass = false;
    }
  }
  return allPass;
}

/// The checked AST of the compiled cell; diagnostics go to `errors`.
const ast::Cell *loadAST(const std::string &path,
                         const std::map<std::string, int64_t> &dims,
                         const std::string &name, mlir::MLIRContext &context,
                         std::unique_ptr<ParsedFile> &file,
                         std::string &errors) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    errors = path + ": cannot read";
    return nullptr;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  llvm::raw_string_ostream stream(errors);
  SourceDiagnosticHandler handler(sourceMgr, &context, stream);
  file = parseCellFile(sourceMgr, context);
  if (!file || !checkCellFile(*file, context, dims))
    return nullptr;
  for (const ast::Cell &cell : file->module->cells)
    if (cell.name == name)
      return &cell;
  errors = "no cell named " + name;
  return nullptr;
}

/// --dim, --no-cache, --inference-only and --probe as the JIT's options,
/// after checking them and --steps and --batch; false after an error.
bool readOptions(jit::CompileOptions &options) {
  options.cellName = cellName;
  for (const std::string &binding : dimBindings) {
    auto [name, value] = llvm::StringRef(binding).split('=');
    int64_t number;
    if (name.empty() || value.getAsInteger(10, number) || number <= 0) {
      llvm::errs() << "cellc check: error: --dim expects "
                      "NAME=POSITIVE_INTEGER, got '"
                   << binding << "'\n";
      return false;
    }
    options.fixedDims[name.str()] = number;
  }
  for (const cl::opt<int> *size : {&stepsOption, &batchOption})
    if (size->getNumOccurrences() && *size < 1) {
      llvm::errs() << "cellc check: error: --" << size->ArgStr
                   << " expects a positive integer, got " << *size << "\n";
      return false;
    }
  if (noCache)
    options.cacheDir = "";
  options.withBackward = !inferenceOnly;
  options.probes.assign(probes.begin(), probes.end());
  return true;
}

/// Small and medium sizes, each in both directions; --steps and --batch
/// replace their T and B.
std::vector<RunConfig> chooseConfigs() {
  std::vector<RunConfig> configs = {
      {"small", 3, 7, 5, 3, false},
      {"small", 3, 7, 5, 3, true},
      {"medium", 16, 32, 9, 4, false},
      {"medium", 16, 32, 9, 4, true},
  };
  for (RunConfig &config : configs) {
    if (stepsOption.getNumOccurrences())
      config.T = stepsOption;
    if (batchOption.getNumOccurrences())
      config.B = batchOption;
  }
  return configs;
}

/// Prints the verdict of all runs; returns the exit code.
int report(const std::string &name, const Summary &summary) {
  if (!summary.backwardChecked)
    llvm::outs() << "NOTE: backward unavailable: "
                 << summary.backwardUnavailable
                 << "; checked the forward pass only\n";
  if (summary.failures == 0) {
    llvm::outs() << "PASS: " << name << ": " << summary.comparisons
                 << " comparisons within tolerance ("
                 << (summary.backwardChecked ? "forward and backward"
                                             : "forward only")
                 << ")\n";
    return 0;
  }
  llvm::outs() << "FAIL: " << name << ": " << summary.failures << " of "
               << summary.comparisons << " comparisons out of tolerance\n";
  return 1;
}

/// Runs every configuration on `cell` (compiled from `ast`).
int checkCell(const ast::Cell &ast, const cellrt::Cell &cell,
              const std::string &name, const GivenParams *given) {
  std::mt19937 rng(seed);
  Summary summary;
  summary.backwardChecked = cell.hasBackward();
  if (!summary.backwardChecked)
    summary.backwardUnavailable =
        "the plan has no backward directives (compiled without training)";
  for (const RunConfig &config : chooseConfigs())
    runConfig(ast, cell, config, given, rng, summary);
  return report(name, summary);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(checkCategory);
  // cellc's own version first; LLVM's (which built it) after.
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "cellc-check (cellc) " CELLC_VERSION "\n";
    cl::PrintVersionMessage();
  });
  cl::ParseCommandLineOptions(
      argc, argv,
      "cellc-check: compare a compiled cell (forward and backward) with a "
      "float64 LibTorch interpreter of its equations\n");

  jit::CompileOptions options;
  if (!readOptions(options))
    return 1;
  auto compiled = jit::compileFile(inputFilename, options);
  if (!compiled) {
    llvm::errs() << compiled.error();
    if (!llvm::StringRef(compiled.error()).endswith("\n"))
      llvm::errs() << "\n";
    llvm::outs() << "FAIL: " << inputFilename << " does not compile\n";
    return 1;
  }
  auto cell = cellrt::Cell::load(compiled->image());
  if (!cell) {
    llvm::errs() << "cellc check: error: " << cell.error() << "\n";
    return 1;
  }

  mlir::DialectRegistry registry;
  registerAllCellDialects(registry);
  mlir::MLIRContext context(registry);
  std::unique_ptr<ParsedFile> file;
  // loadAST's diagnostics may hold warnings alone (the JIT printed them):
  // only a missing AST is an error.
  std::string astErrors;
  const ast::Cell *ast = loadAST(inputFilename, options.fixedDims,
                                 compiled->cellName(), context, file, astErrors);
  if (!ast) {
    llvm::errs() << "cellc check: error: " << astErrors << "\n";
    return 1;
  }
  GivenParams given;
  if (!paramsFile.empty()) {
    std::string errors = readGivenParams(paramsFile, cell->getPlan(), *ast,
                                         options.fixedDims, given);
    if (!errors.empty()) {
      llvm::errs() << "cellc check: error: " << errors << "\n";
      return 1;
    }
  }

  llvm::outs() << "cellc check: cell " << compiled->cellName() << " ("
               << inputFilename << "), JIT "
               << llvm::format("%.3f", compiled->compileSeconds()) << " s"
               << (compiled->fromCache() ? " (cache hit)" : " (compiled)")
               << "\n";
  if (!paramsFile.empty())
    llvm::outs() << "params: " << paramsFile << "\n";
  return checkCell(*ast, *cell, compiled->cellName(),
                   paramsFile.empty() ? nullptr : &given);
}
