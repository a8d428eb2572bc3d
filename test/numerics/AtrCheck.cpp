//===- AtrCheck.cpp - ATR through cellrt vs LibTorch ----------------------===//

#include "AtrCheck.h"

#include "cellrt/Runtime.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

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
