//===- AtrCheck.cpp - ATR through cellrt vs LibTorch ----------------------===//

#include "AtrCheck.h"

#include "cellrt/Runtime.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <map>
#include <string>

using namespace cellrt_test;

std::vector<AtrSize> cellrt_test::defaultAtrSizes() {
  return {{1, 1, 1, 1},
          {5, 3, 4, 6},
          {13, 7, 33, 17},
          {40, 16, 64, 128},
          {12, 9, 256, 300}};
}

namespace {

/// Random data for one size, in float32 for cellrt and float64 for the
/// reference.
struct AtrProblem {
  AtrSize size;
  torch::Tensor x, h0, wx, wh, lengths;

  explicit AtrProblem(const AtrSize &size) : size(size) {
    auto options = torch::dtype(torch::kFloat32);
    x = torch::randn({size.steps, size.batch, size.inputSize}, options);
    h0 = torch::randn({size.batch, size.hidden}, options);
    // Scaled so that the state neither vanishes nor saturates the gates.
    wx = torch::randn({size.hidden, size.inputSize}, options) /
         std::sqrt(static_cast<double>(size.inputSize));
    wh = torch::randn({size.hidden, size.hidden}, options) /
         std::sqrt(static_cast<double>(size.hidden));
    lengths = torch::randint(1, size.steps + 1, {size.batch}, torch::kInt32);
    lengths[0] = static_cast<int32_t>(size.steps);
    if (size.batch > 1)
      lengths[size.batch - 1] = 1;
  }

  /// Each sequence on its own, step by step, in float64.
  void reference(bool reverse, bool withInitialState, torch::Tensor &out,
                 torch::Tensor &finalState) const {
    auto d = torch::kFloat64;
    out = torch::zeros({size.steps, size.batch, size.hidden}, d);
    finalState = torch::zeros({size.batch, size.hidden}, d);
    torch::Tensor wx64 = wx.to(d), wh64 = wh.to(d), x64 = x.to(d);
    for (int64_t b = 0; b < size.batch; ++b) {
      int64_t length = lengths[b].item<int32_t>();
      torch::Tensor h =
          withInitialState ? h0[b].to(d) : torch::zeros({size.hidden}, d);
      for (int64_t i = 0; i < length; ++i) {
        int64_t t = reverse ? length - 1 - i : i;
        torch::Tensor p = torch::mv(wx64, x64[t][b]);
        torch::Tensor q = torch::mv(wh64, h);
        torch::Tensor inputGate = torch::sigmoid(p + q);
        torch::Tensor forgetGate = torch::sigmoid(p - q);
        h = inputGate * p + forgetGate * h;
        out[t][b] = h;
      }
      finalState[b] = h;
    }
  }
};

double relativeError(const torch::Tensor &actual,
                     const torch::Tensor &expected) {
  torch::Tensor difference = actual.to(torch::kFloat64) - expected;
  double scale = expected.abs().max().item<double>();
  return difference.abs().max().item<double>() / std::max(scale, 1e-30);
}

} // namespace

void cellrt_test::runAtrCheck(const cellrt_image &image,
                              const std::vector<AtrSize> &sizes,
                              double tolerance) {
  cellrt::Expected<cellrt::Cell> cell = cellrt::Cell::load(image);
  ASSERT_TRUE(cell.ok()) << cell.error();
  ASSERT_EQ(cell->getPlan().inputs.size(), 1u);
  ASSERT_EQ(cell->getPlan().states.size(), 1u);
  torch::manual_seed(2018);
  for (const AtrSize &size : sizes) {
    AtrProblem problem(size);
    for (bool reverse : {false, true})
      for (bool withInitialState : {true, false}) {
        SCOPED_TRACE("T=" + std::to_string(size.steps) +
                     " B=" + std::to_string(size.batch) +
                     " I=" + std::to_string(size.inputSize) +
                     " H=" + std::to_string(size.hidden) +
                     (reverse ? " reverse" : " forward") +
                     (withInitialState ? " h0" : " zero h0"));
        torch::Tensor out =
            torch::full({size.steps, size.batch, size.hidden}, -1.0f);
        torch::Tensor finalState =
            torch::full({size.batch, size.hidden}, -1.0f);
        cellrt::ForwardArgs args;
        args.inputs = {{problem.x.data_ptr<float>(),
                        {size.steps, size.batch, size.inputSize}}};
        args.lengths = problem.lengths.data_ptr<int32_t>();
        if (withInitialState)
          args.initialStates = {
              {problem.h0.data_ptr<float>(), {size.batch, size.hidden}}};
        args.params = {
            {"Wx",
             {problem.wx.data_ptr<float>(), {size.hidden, size.inputSize}}},
            {"Wh", {problem.wh.data_ptr<float>(), {size.hidden, size.hidden}}}};
        args.reverse = reverse;
        args.output = {out.data_ptr<float>(),
                       {size.steps, size.batch, size.hidden}};
        args.finalStates = {
            {finalState.data_ptr<float>(), {size.batch, size.hidden}}};
        cellrt::Status status = cell->forward(args);
        ASSERT_TRUE(status.ok()) << status.message();

        torch::Tensor expectedOut, expectedFinal;
        problem.reference(reverse, withInitialState, expectedOut,
                          expectedFinal);
        EXPECT_LE(relativeError(out, expectedOut), tolerance);
        EXPECT_LE(relativeError(finalState, expectedFinal), tolerance);
        // Padded steps are exactly zero.
        torch::Tensor steps = torch::arange(size.steps).unsqueeze(1);
        torch::Tensor padded = steps >= problem.lengths.unsqueeze(0);
        EXPECT_EQ(out.index({padded}).abs().sum().item<float>(), 0.0f);
      }
  }
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

namespace {

/// Float64 values and gradients of the per-sequence reference.
struct AtrReference {
  torch::Tensor out, finalState, x, h0, wx, wh;
};

/// L = sum(out * dOut) + sum(finalState * dFinal) through the reference
/// walk of AtrProblem::reference, differentiated by LibTorch autograd.
AtrReference referenceGradients(const AtrProblem &problem, bool reverse,
                                bool withInitialState,
                                const torch::Tensor &dOut,
                                const torch::Tensor &dFinal) {
  const AtrSize &size = problem.size;
  auto d = torch::kFloat64;
  torch::Tensor x = problem.x.to(d).requires_grad_();
  torch::Tensor h0 =
      (withInitialState ? problem.h0.to(d)
                        : torch::zeros({size.batch, size.hidden}, d))
          .requires_grad_();
  torch::Tensor wx = problem.wx.to(d).requires_grad_();
  torch::Tensor wh = problem.wh.to(d).requires_grad_();
  torch::Tensor dOut64 = dOut.to(d), dFinal64 = dFinal.to(d);
  AtrReference result;
  result.out = torch::zeros({size.steps, size.batch, size.hidden}, d);
  result.finalState = torch::zeros({size.batch, size.hidden}, d);
  std::vector<torch::Tensor> terms;
  for (int64_t b = 0; b < size.batch; ++b) {
    int64_t length = problem.lengths[b].item<int32_t>();
    torch::Tensor h = h0[b];
    for (int64_t i = 0; i < length; ++i) {
      int64_t t = reverse ? length - 1 - i : i;
      torch::Tensor p = torch::mv(wx, x[t][b]);
      torch::Tensor q = torch::mv(wh, h);
      h = torch::sigmoid(p + q) * p + torch::sigmoid(p - q) * h;
      terms.push_back(torch::dot(h, dOut64[t][b]));
      result.out[t][b] = h.detach();
    }
    terms.push_back(torch::dot(h, dFinal64[b]));
    result.finalState[b] = h.detach();
  }
  torch::stack(terms).sum().backward();
  result.x = x.grad();
  result.h0 = h0.grad();
  result.wx = wx.grad();
  result.wh = wh.grad();
  return result;
}

} // namespace

void cellrt_test::runAtrGradientCheck(const cellrt_image &image,
                                      const std::vector<AtrSize> &sizes,
                                      double tolerance) {
  cellrt::Expected<cellrt::Cell> cell = cellrt::Cell::load(image);
  ASSERT_TRUE(cell.ok()) << cell.error();
  ASSERT_TRUE(cell->hasBackward()) << "the plan has no backward directives";
  ASSERT_EQ(cell->getPlan().inputs.size(), 1u);
  ASSERT_EQ(cell->getPlan().states.size(), 1u);
  torch::manual_seed(2019);
  std::map<std::string, double> worst;
  for (const AtrSize &size : sizes) {
    AtrProblem problem(size);
    int64_t T = size.steps, B = size.batch, I = size.inputSize, H = size.hidden;
    for (bool reverse : {false, true})
      for (bool withInitialState : {true, false}) {
        SCOPED_TRACE("T=" + std::to_string(T) + " B=" + std::to_string(B) +
                     " I=" + std::to_string(I) + " H=" + std::to_string(H) +
                     (reverse ? " reverse" : " forward") +
                     (withInitialState ? " h0" : " zero h0"));
        torch::Tensor out = torch::full({T, B, H}, -1.0f);
        torch::Tensor finalState = torch::full({B, H}, -1.0f);
        cellrt::ForwardArgs args;
        args.inputs = {{problem.x.data_ptr<float>(), {T, B, I}}};
        args.lengths = problem.lengths.data_ptr<int32_t>();
        if (withInitialState)
          args.initialStates = {{problem.h0.data_ptr<float>(), {B, H}}};
        args.params = {{"Wx", {problem.wx.data_ptr<float>(), {H, I}}},
                       {"Wh", {problem.wh.data_ptr<float>(), {H, H}}}};
        args.reverse = reverse;
        args.output = {out.data_ptr<float>(), {T, B, H}};
        args.finalStates = {{finalState.data_ptr<float>(), {B, H}}};
        cellrt::Tape tape;
        cellrt::Status status = cell->forward(args, tape);
        ASSERT_TRUE(status.ok()) << status.message();
        ASSERT_TRUE(tape.isRecorded());

        // dOut is nonzero at padded steps too: they must not leak.
        torch::Tensor dOut = torch::randn({T, B, H});
        torch::Tensor dFinal = torch::randn({B, H});
        AtrReference expected = referenceGradients(
            problem, reverse, withInitialState, dOut, dFinal);
        EXPECT_LE(relativeError(out, expected.out), tolerance);
        EXPECT_LE(relativeError(finalState, expected.finalState), tolerance);

        torch::Tensor dx = torch::zeros({T, B, I}), dh0 = torch::zeros({B, H}),
                      dwx = torch::zeros({H, I}), dwh = torch::zeros({H, H});
        cellrt::BackwardArgs gradients;
        gradients.outputGradient = {dOut.data_ptr<float>(), {T, B, H}};
        gradients.finalStateGradients = {{dFinal.data_ptr<float>(), {B, H}}};
        gradients.inputGradients = {{dx.data_ptr<float>(), {T, B, I}}};
        gradients.initialStateGradients = {{dh0.data_ptr<float>(), {B, H}}};
        gradients.paramGradients = {{"Wx", {dwx.data_ptr<float>(), {H, I}}},
                                    {"Wh", {dwh.data_ptr<float>(), {H, H}}}};
        status = cell->backward(args, gradients, tape);
        ASSERT_TRUE(status.ok()) << status.message();

        std::pair<const char *, std::pair<torch::Tensor, torch::Tensor>>
            compared[] = {{"dx", {dx, expected.x}},
                          {"dh0", {dh0, expected.h0}},
                          {"dWx", {dwx, expected.wx}},
                          {"dWh", {dwh, expected.wh}}};
        for (auto &[name, pair] : compared) {
          double error = relativeError(pair.first, pair.second);
          EXPECT_LE(error, tolerance) << name;
          worst[name] = std::max(worst[name], error);
        }
        torch::Tensor steps = torch::arange(T).unsqueeze(1);
        torch::Tensor padded = steps >= problem.lengths.unsqueeze(0);
        EXPECT_EQ(dx.index({padded}).abs().sum().item<float>(), 0.0f);

        // backward() accumulates: a second call doubles every gradient.
        std::vector<torch::Tensor> once = {dx.clone(), dh0.clone(), dwx.clone(),
                                           dwh.clone()};
        status = cell->backward(args, gradients, tape);
        ASSERT_TRUE(status.ok()) << status.message();
        std::vector<torch::Tensor> twice = {dx, dh0, dwx, dwh};
        for (size_t i = 0; i < once.size(); ++i)
          EXPECT_LE(relativeError(twice[i], 2 * once[i].to(torch::kFloat64)),
                    1e-6)
              << compared[i].first << " after a second backward()";
      }
  }
  std::string report = "ATR gradients, largest relative error:";
  for (const auto &[name, error] : worst) {
    char text[64];
    std::snprintf(text, sizeof text, " %s=%.3g", name.c_str(), error);
    report += text;
  }
  std::printf("%s\n", report.c_str());
}
