//===- atr_forward.cpp - Run a cellc-compiled ATR cell over a batch -------===//
//
// The ahead-of-time way to use cellc:
//   cellc cells/atr.cell -o atr.o && cellc cells/atr.cell -emit=header -o atr.h
//   c++ atr_forward.cpp atr.o -lcellrt
// This program builds a sample batch of ragged sequences (a fixed seed, so
// every run prints the same numbers), runs ATR over it in both directions,
// and reports what it did and how fast it went at a training-sized shape.
//
//===----------------------------------------------------------------------===//

#include "atr.h"
#include "cellrt/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace {

struct Batch {
  int64_t steps, batch, inputSize, hidden;
  std::vector<float> x, wx, wh, out, finalState;
  std::vector<int32_t> lengths;
};

Batch makeBatch(int64_t steps, int64_t batch, int64_t inputSize,
                int64_t hidden, unsigned seed) {
  Batch b{steps, batch, inputSize, hidden, {}, {}, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-0.1f, 0.1f);
  auto fill = [&](std::vector<float> &v, size_t n) {
    v.resize(n);
    for (float &e : v)
      e = uniform(rng);
  };
  fill(b.x, steps * batch * inputSize);
  fill(b.wx, hidden * inputSize);
  fill(b.wh, hidden * hidden);
  b.out.assign(steps * batch * hidden, 0);
  b.finalState.assign(batch * hidden, 0);
  std::uniform_int_distribution<int32_t> length(1, steps);
  for (int64_t i = 0; i < batch; ++i)
    b.lengths.push_back(i == 0 ? steps : length(rng));
  return b;
}

cellrt::Status run(const cellrt::Cell &cell, Batch &b, bool reverse) {
  cellrt::ForwardArgs args;
  args.inputs = {{b.x.data(), {b.steps, b.batch, b.inputSize}}};
  args.lengths = b.lengths.data();
  args.params = {{"Wx", {b.wx.data(), {b.hidden, b.inputSize}}},
                 {"Wh", {b.wh.data(), {b.hidden, b.hidden}}}};
  args.output = {b.out.data(), {b.steps, b.batch, b.hidden}};
  args.finalStates = {{b.finalState.data(), {b.batch, b.hidden}}};
  args.reverse = reverse;
  return cell.forward(args);
}

double norm(const std::vector<float> &v) {
  double sum = 0;
  for (float e : v)
    sum += double(e) * e;
  return std::sqrt(sum);
}

} // namespace

int main() {
  auto cell = cellrt::Cell::load(cellc_atr_image());
  if (!cell) {
    std::fprintf(stderr, "atr_forward: %s\n", cell.error().c_str());
    return 1;
  }
  std::printf("loaded cell '%s': %zu plan operations, %lld fused kernel(s)\n",
              cell->getPlan().cellName.c_str(),
              cell->getPlan().operations.size(),
              static_cast<long long>(cellc_atr_num_kernels));

  Batch sample = makeBatch(/*steps=*/12, /*batch=*/8, /*inputSize=*/32,
                           /*hidden=*/64, /*seed=*/7);
  std::printf("sample batch: T=12 B=8 I=32 H=64, lengths");
  for (int32_t length : sample.lengths)
    std::printf(" %d", length);
  std::printf("\n");
  for (bool reverse : {false, true}) {
    cellrt::Status status = run(*cell, sample, reverse);
    if (!status.ok()) {
      std::fprintf(stderr, "atr_forward: %s\n", status.message().c_str());
      return 1;
    }
    std::printf("  %s: |out| = %.6f  |h_final| = %.6f  out[0,0,0:3] = %.6f "
                "%.6f %.6f\n",
                reverse ? "reverse" : "forward", norm(sample.out),
                norm(sample.finalState), sample.out[0], sample.out[1],
                sample.out[2]);
  }

  Batch large = makeBatch(50, 64, 512, 512, 11);
  std::fill(large.lengths.begin(), large.lengths.end(), 50);
  std::vector<double> times;
  for (int repeat = 0; repeat < 5; ++repeat) {
    auto start = std::chrono::steady_clock::now();
    if (!run(*cell, large, false).ok())
      return 1;
    times.push_back(std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  std::sort(times.begin(), times.end());
  std::printf("forward T=50 B=64 I=H=512: median %.2f ms over 5 runs "
              "(%.0f sequences/s)\n",
              times[2], 64 * 1000.0 / times[2]);
  return 0;
}
