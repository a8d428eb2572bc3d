//===- CellCheck.cpp - Compiled cells through cellrt vs LibTorch ----------===//
//
// The one TU that includes <torch/torch.h>. Everything cellrt gets is float32
// and built from the plan's declarations; the reference sees the same values
// in float64 and walks each sequence on its own, so the comparison also
// checks the runtime's handling of lengths, padding and direction.
//
//===----------------------------------------------------------------------===//

#include "CellCheck.h"
#include "References.h"

#include "cellrt/Runtime.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <sstream>

using namespace cellc_test;

std::string CellSize::str() const {
  std::string text =
      "T=" + std::to_string(steps) + " B=" + std::to_string(batch);
  for (const auto &[name, value] : dims)
    text += " " + name + "=" + std::to_string(value);
  return text;
}

std::string CellCheckReport::str() const {
  std::ostringstream os;
  os.precision(3);
  os << cases << " cases; max rel err: output " << output << ", final states "
     << finalStates;
  if (!worstFinalState.empty())
    os << " (" << worstFinalState << ")";
  if (inputGradients || initialStateGradients || paramGradients)
    os << ", d(inputs) " << inputGradients << ", d(initial states) "
       << initialStateGradients << " (" << worstInitialStateGradient
       << "), d(params) " << paramGradients << " (" << worstParamGradient
       << ")";
  return os.str();
}

std::vector<CellSize> cellc_test::defaultCellSizes(const Reference &reference) {
  auto size = [&](int64_t t, int64_t b, int64_t i, int64_t h) {
    CellSize s;
    s.steps = t;
    s.batch = b;
    s.dims = {{"H", h}, {"I", reference.inputIsHidden ? h : i}};
    return s;
  };
  return {size(5, 3, 7, 6), size(1, 1, 3, 2), size(20, 8, 64, 48)};
}

namespace {

using torch::Tensor;

double relativeError(const Tensor &actual, const Tensor &expected) {
  Tensor difference = actual.to(torch::kFloat64) - expected.to(torch::kFloat64);
  double scale = expected.abs().max().item<double>();
  double error = difference.abs().max().item<double>();
  if (error == 0)
    return 0;
  return error / std::max(scale, 1e-30);
}

/// Everything one (size) problem needs, drawn once: float32 arrays for
/// cellrt, with float64 copies for the reference.
struct Problem {
  const cellrt::Plan &plan;
  const Reference &reference;
  CellSize size;
  int64_t T, B, outputWidth;
  std::vector<int64_t> inputWidths, stateWidths;
  std::vector<Tensor> inputs, initialStates; // float32
  std::map<std::string, Tensor> params;      // float32, plan shapes
  Tensor lengths;                            // int32 [B]

  Problem(const cellrt::Plan &plan, const Reference &reference,
          const CellSize &size)
      : plan(plan), reference(reference), size(size), T(size.steps),
        B(size.batch) {}

  /// Binds the plan's dims and draws the data; false (with a GoogleTest
  /// failure) when the plan uses a dim the size does not give.
  bool draw() {
    for (const std::string &dim : plan.dims)
      if (!size.dims.count(dim)) {
        ADD_FAILURE() << "plan dim '" << dim << "' has no value in "
                      << size.str();
        return false;
      }
    auto eval = [&](const cellrt::DimExpr &expr) {
      return *expr.evaluate(size.dims);
    };
    auto uniform = [](std::vector<int64_t> shape, double bound) {
      return torch::rand(shape, torch::kFloat32) * (2 * bound) - bound;
    };
    for (const cellrt::VectorDecl &input : plan.inputs) {
      inputWidths.push_back(eval(input.length));
      inputs.push_back(uniform({T, B, inputWidths.back()}, 1.0));
    }
    for (const cellrt::VectorDecl &state : plan.states) {
      stateWidths.push_back(eval(state.length));
      initialStates.push_back(uniform({B, stateWidths.back()}, 1.0));
    }
    for (const cellrt::ParamDecl &param : plan.params) {
      std::vector<int64_t> shape;
      for (const cellrt::DimExpr &dim : param.shape)
        shape.push_back(eval(dim));
      params[param.name] = uniform(shape, 0.5);
    }
    outputWidth = eval(plan.outputWidth);
    // Ragged: one full-length sequence, one of length 1, the rest random.
    lengths = torch::randint(1, T + 1, {B}, torch::kInt32);
    lengths[0] = static_cast<int32_t>(T);
    if (B > 1)
      lengths[B - 1] = 1;
    return true;
  }

  int64_t length(int64_t b) const { return lengths[b].item<int32_t>(); }

  /// [T, B] true at padded steps.
  Tensor paddedMask() const {
    return torch::arange(T).unsqueeze(1) >= lengths.unsqueeze(0);
  }

  /// The cellrt arguments; `withInitialState` false leaves initialStates
  /// empty (zeros).
  cellrt::ForwardArgs args(bool reverse, bool withInitialState, Tensor &out,
                           std::vector<Tensor> &finalStates) {
    cellrt::ForwardArgs args;
    for (size_t i = 0; i < inputs.size(); ++i)
      args.inputs.push_back(
          {inputs[i].data_ptr<float>(), {T, B, inputWidths[i]}});
    args.lengths = lengths.data_ptr<int32_t>();
    if (withInitialState)
      for (size_t s = 0; s < initialStates.size(); ++s)
        args.initialStates.push_back(
            {initialStates[s].data_ptr<float>(), {B, stateWidths[s]}});
    for (auto &[name, value] : params)
      args.params[name] = {value.data_ptr<float>(), value.sizes().vec()};
    args.reverse = reverse;
    // Sentinels: anything cellrt fails to write shows up.
    out = torch::full({T, B, outputWidth}, -7.0f);
    args.output = {out.data_ptr<float>(), {T, B, outputWidth}};
    finalStates.clear();
    for (size_t s = 0; s < stateWidths.size(); ++s) {
      finalStates.push_back(torch::full({B, stateWidths[s]}, -7.0f));
      args.finalStates.push_back(
          {finalStates.back().data_ptr<float>(), {B, stateWidths[s]}});
    }
    return args;
  }

  /// The reference over every sequence separately, in float64. `x`,
  /// `initial` and `refParams` are float64 (possibly requiring grad); outputs
  /// at padded steps stay exactly 0.
  void evaluate(bool reverse, const Tensor &x,
                const std::vector<Tensor> &initial,
                const ReferenceParams &refParams, Tensor &out,
                std::vector<Tensor> &finalStates) const {
    std::vector<std::vector<Tensor>> outRows(
        T,
        std::vector<Tensor>(B, torch::zeros({outputWidth}, torch::kFloat64)));
    std::vector<std::vector<Tensor>> finals(stateWidths.size());
    for (int64_t b = 0; b < B; ++b) {
      int64_t len = length(b);
      std::vector<Tensor> states;
      for (const Tensor &s : initial)
        states.push_back(s[b]);
      for (int64_t i = 0; i < len; ++i) {
        int64_t t = reverse ? len - 1 - i : i;
        ReferenceStep step = reference.step(refParams, x[t][b], states);
        outRows[t][b] = step.output;
        states = std::move(step.next);
      }
      for (size_t s = 0; s < states.size(); ++s)
        finals[s].push_back(states[s]);
    }
    std::vector<Tensor> steps;
    for (auto &row : outRows)
      steps.push_back(torch::stack(row));
    out = torch::stack(steps);
    finalStates.clear();
    for (auto &rows : finals)
      finalStates.push_back(torch::stack(rows));
  }
};

std::string caseName(const CellSize &size, bool reverse, bool withInitial) {
  return size.str() + (reverse ? " reverse" : " forward") +
         (withInitial ? " random initial state" : " zero initial state");
}

/// Loads the image and checks its interface against the reference's; false
/// (with failures) when they disagree.
bool loadCell(const cellrt_image &image, const Reference &reference,
              std::optional<cellrt::Cell> &cell) {
  cellrt::Expected<cellrt::Cell> loaded = cellrt::Cell::load(image);
  if (!loaded.ok()) {
    ADD_FAILURE() << "loading " << reference.cell << ": " << loaded.error();
    return false;
  }
  cell.emplace(std::move(*loaded));
  const cellrt::Plan &plan = cell->getPlan();
  bool ok = true;
  auto names = [](const auto &decls) {
    std::vector<std::string> result;
    for (const auto &decl : decls)
      result.push_back(decl.name);
    return result;
  };
  EXPECT_EQ(plan.cellName, reference.cell);
  if (names(plan.inputs) != reference.inputs) {
    ADD_FAILURE() << reference.cell << ": plan inputs differ from the "
                  << "reference's";
    ok = false;
  }
  if (names(plan.states) != reference.states) {
    ADD_FAILURE() << reference.cell << ": plan states differ from the "
                  << "reference's";
    ok = false;
  }
  std::vector<std::string> planParams = names(plan.params),
                           refParams = reference.params;
  std::sort(planParams.begin(), planParams.end());
  std::sort(refParams.begin(), refParams.end());
  if (planParams != refParams) {
    ADD_FAILURE() << reference.cell << ": plan params differ from the "
                  << "reference's";
    ok = false;
  }
  return ok;
}

ReferenceParams toReference(const std::map<std::string, Tensor> &params,
                            bool requiresGrad) {
  ReferenceParams result;
  for (const auto &[name, value] : params)
    result[name] =
        value.to(torch::kFloat64).detach().requires_grad_(requiresGrad);
  return result;
}

} // namespace

bool cellc_test::imageHasBackward(const cellrt_image &image) {
  cellrt::Expected<cellrt::Cell> cell = cellrt::Cell::load(image);
  return cell.ok() && cell->hasBackward();
}

CellCheckReport cellc_test::checkCellForward(const cellrt_image &image,
                                             const Reference &reference,
                                             const std::vector<CellSize> &sizes,
                                             double tolerance) {
  CellCheckReport report;
  std::optional<cellrt::Cell> cell;
  if (!loadCell(image, reference, cell))
    return report;
  const cellrt::Plan &plan = cell->getPlan();
  torch::manual_seed(2017);
  torch::NoGradGuard noGrad;
  for (const CellSize &size : sizes) {
    Problem problem(plan, reference, size);
    if (!problem.draw())
      continue;
    Tensor x64 = problem.inputs[0].to(torch::kFloat64);
    ReferenceParams refParams = toReference(problem.params, false);
    Tensor padded = problem.paddedMask();
    for (bool reverse : {false, true})
      for (bool withInitial : {true, false}) {
        std::string name = caseName(size, reverse, withInitial);
        SCOPED_TRACE(reference.cell + " " + name);
        ++report.cases;
        Tensor out;
        std::vector<Tensor> finals;
        cellrt::ForwardArgs args =
            problem.args(reverse, withInitial, out, finals);
        cellrt::Status status = cell->forward(args);
        if (!status.ok()) {
          ADD_FAILURE() << "forward: " << status.message();
          continue;
        }
        std::vector<Tensor> initial;
        for (size_t s = 0; s < problem.initialStates.size(); ++s)
          initial.push_back(
              withInitial ? problem.initialStates[s].to(torch::kFloat64)
                          : torch::zeros({problem.B, problem.stateWidths[s]},
                                         torch::kFloat64));
        Tensor expectedOut;
        std::vector<Tensor> expectedFinals;
        try {
          problem.evaluate(reverse, x64, initial, refParams, expectedOut,
                           expectedFinals);
        } catch (const std::exception &e) {
          ADD_FAILURE() << "reference " << reference.source
                        << " failed (param shapes?): " << e.what();
          return report;
        }
        double outError = relativeError(out, expectedOut);
        report.output = std::max(report.output, outError);
        EXPECT_LE(outError, tolerance)
            << "output [T, B, " << problem.outputWidth << "]";
        for (size_t s = 0; s < finals.size(); ++s) {
          double error = relativeError(finals[s], expectedFinals[s]);
          if (error >= report.finalStates) {
            report.finalStates = error;
            report.worstFinalState = plan.states[s].name;
          }
          EXPECT_LE(error, tolerance)
              << "final state '" << plan.states[s].name << "'";
        }
        EXPECT_EQ(out.index({padded}).abs().sum().item<float>(), 0.0f)
            << "padded outputs must be exactly 0";
      }
  }
  return report;
}

CellCheckReport cellc_test::checkCellGradients(
    const cellrt_image &image, const Reference &reference,
    const std::vector<CellSize> &sizes, double tolerance) {
  CellCheckReport report;
  std::optional<cellrt::Cell> cell;
  if (!loadCell(image, reference, cell))
    return report;
  const cellrt::Plan &plan = cell->getPlan();
  torch::manual_seed(2018);
  for (const CellSize &size : sizes) {
    Problem problem(plan, reference, size);
    if (!problem.draw())
      continue;
    const int64_t T = problem.T, B = problem.B;
    Tensor padded = problem.paddedMask();
    // Random dL/d(output) everywhere, padding included: nothing may flow
    // from padded outputs.
    Tensor dout = torch::randn({T, B, problem.outputWidth}, torch::kFloat32);
    std::vector<Tensor> dfinals;
    for (int64_t width : problem.stateWidths)
      dfinals.push_back(torch::randn({B, width}, torch::kFloat32));
    for (bool reverse : {false, true})
      for (bool withInitial : {true, false}) {
        std::string name = caseName(size, reverse, withInitial);
        SCOPED_TRACE(reference.cell + " gradients " + name);
        ++report.cases;
        // cellrt: training forward, then backward into zeroed arrays.
        Tensor out;
        std::vector<Tensor> finals;
        cellrt::ForwardArgs args =
            problem.args(reverse, withInitial, out, finals);
        cellrt::Tape tape;
        cellrt::Status status = cell->forward(args, tape);
        if (!status.ok()) {
          ADD_FAILURE() << "forward(args, tape): " << status.message();
          continue;
        }
        cellrt::BackwardArgs grads;
        grads.outputGradient = {dout.data_ptr<float>(),
                                {T, B, problem.outputWidth}};
        for (size_t s = 0; s < dfinals.size(); ++s)
          grads.finalStateGradients.push_back(
              {dfinals[s].data_ptr<float>(), {B, problem.stateWidths[s]}});
        std::vector<Tensor> dinputs, dinitials;
        for (size_t i = 0; i < problem.inputs.size(); ++i) {
          dinputs.push_back(torch::zeros({T, B, problem.inputWidths[i]}));
          grads.inputGradients.push_back({dinputs.back().data_ptr<float>(),
                                          {T, B, problem.inputWidths[i]}});
        }
        for (size_t s = 0; s < problem.stateWidths.size(); ++s) {
          dinitials.push_back(torch::zeros({B, problem.stateWidths[s]}));
          grads.initialStateGradients.push_back(
              {dinitials.back().data_ptr<float>(),
               {B, problem.stateWidths[s]}});
        }
        std::map<std::string, Tensor> dparams;
        for (auto &[pname, value] : problem.params) {
          dparams[pname] = torch::zeros_like(value);
          grads.paramGradients[pname] = {dparams[pname].data_ptr<float>(),
                                         value.sizes().vec()};
        }
        status = cell->backward(args, grads, tape);
        if (!status.ok()) {
          ADD_FAILURE() << "backward: " << status.message();
          continue;
        }

        // The reference through autograd, in float64.
        Tensor x64 =
            problem.inputs[0].to(torch::kFloat64).detach().requires_grad_(true);
        std::vector<Tensor> initial;
        for (size_t s = 0; s < problem.initialStates.size(); ++s)
          initial.push_back(
              (withInitial
                   ? problem.initialStates[s].to(torch::kFloat64)
                   : torch::zeros({B, problem.stateWidths[s]}, torch::kFloat64))
                  .detach()
                  .requires_grad_(true));
        ReferenceParams refParams = toReference(problem.params, true);
        Tensor expectedOut;
        std::vector<Tensor> expectedFinals;
        try {
          problem.evaluate(reverse, x64, initial, refParams, expectedOut,
                           expectedFinals);
        } catch (const std::exception &e) {
          ADD_FAILURE() << "reference " << reference.source
                        << " failed (param shapes?): " << e.what();
          return report;
        }
        Tensor loss = (expectedOut * dout.to(torch::kFloat64)).sum();
        for (size_t s = 0; s < expectedFinals.size(); ++s)
          loss =
              loss + (expectedFinals[s] * dfinals[s].to(torch::kFloat64)).sum();
        std::vector<Tensor> leaves = {x64};
        leaves.insert(leaves.end(), initial.begin(), initial.end());
        std::vector<std::string> paramNames;
        for (auto &[pname, value] : refParams) {
          paramNames.push_back(pname);
          leaves.push_back(value);
        }
        std::vector<Tensor> expected = torch::autograd::grad(
            {loss}, leaves, /*grad_outputs=*/{}, /*retain_graph=*/false,
            /*create_graph=*/false, /*allow_unused=*/true);
        auto orZeros = [](const Tensor &grad, const Tensor &like) {
          return grad.defined() ? grad : torch::zeros_like(like);
        };

        double error = relativeError(dinputs[0], orZeros(expected[0], x64));
        report.inputGradients = std::max(report.inputGradients, error);
        EXPECT_LE(error, tolerance)
            << "d(input '" << plan.inputs[0].name << "')";
        EXPECT_EQ(dinputs[0].index({padded}).abs().sum().item<float>(), 0.0f)
            << "padded steps' input gradients must be exactly 0";
        for (size_t s = 0; s < dinitials.size(); ++s) {
          error =
              relativeError(dinitials[s], orZeros(expected[1 + s], initial[s]));
          if (error >= report.initialStateGradients) {
            report.initialStateGradients = error;
            report.worstInitialStateGradient = plan.states[s].name;
          }
          EXPECT_LE(error, tolerance)
              << "d(initial state '" << plan.states[s].name << "')";
        }
        for (size_t p = 0; p < paramNames.size(); ++p) {
          const std::string &pname = paramNames[p];
          error = relativeError(
              dparams[pname],
              orZeros(expected[1 + initial.size() + p], refParams[pname]));
          if (error >= report.paramGradients) {
            report.paramGradients = error;
            report.worstParamGradient = pname;
          }
          EXPECT_LE(error, tolerance) << "d(param '" << pname << "')";
        }
        // Training mode must not change what forward computes.
        torch::NoGradGuard noGrad;
        error = relativeError(out, expectedOut.detach());
        report.output = std::max(report.output, error);
        EXPECT_LE(error, tolerance) << "training-mode output";
        for (size_t s = 0; s < finals.size(); ++s) {
          double finalError =
              relativeError(finals[s], expectedFinals[s].detach());
          if (finalError >= report.finalStates) {
            report.finalStates = finalError;
            report.worstFinalState = plan.states[s].name;
          }
          EXPECT_LE(finalError, tolerance)
              << "training-mode final state '" << plan.states[s].name << "'";
        }
      }
  }
  return report;
}
