// Compiles a cell at run time through the installed JIT (cellc::jit), runs
// it with the C++ runtime, and round-trips its params through a .npz
// archive, as a user's program would.
#include "cellrt/Runtime.h"
#include "jit/Jit.h"
#include "jit/Npz.h"

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  cellc::jit::CompileOptions options;
  options.cacheDir = ""; // compile, do not touch the user's cache
  auto compiled = cellc::jit::compileSource(
      "cell c(x: [H]) { state h: [H]; param W: [H, H]; h' = tanh(W @ x + h) }",
      "inline.cell", options);
  if (!compiled) {
    std::fprintf(stderr, "%s\n", compiled.error().c_str());
    return 1;
  }
  auto cell = cellrt::Cell::load(compiled->image());
  if (!cell) {
    std::fprintf(stderr, "%s\n", cell.error().c_str());
    return 1;
  }
  // W = identity, x = 1 at both steps: h1 = tanh(1), h2 = tanh(1 + h1).
  const int64_t T = 2, B = 1, H = 3;
  std::vector<float> x(T * B * H, 1.0f), w(H * H, 0.0f), out(T * B * H);
  for (int64_t i = 0; i < H; ++i)
    w[i * H + i] = 1.0f;
  if (std::string e = cellc::npy::writeArchive("params.npz", {{"W", {{H, H},
                                                                   w.data()}}});
      !e.empty()) {
    std::fprintf(stderr, "%s\n", e.c_str());
    return 1;
  }
  std::map<std::string, cellc::npy::Array> params;
  if (std::string e = cellc::npy::readArchive("params.npz", params);
      !e.empty()) {
    std::fprintf(stderr, "%s\n", e.c_str());
    return 1;
  }
  std::vector<int32_t> lengths(B, T);
  cellrt::ForwardArgs args;
  args.lengths = lengths.data();
  args.inputs.push_back({x.data(), {T, B, H}});
  args.params["W"] = {params["W"].floats.data(), params["W"].shape};
  args.output = {out.data(), {T, B, H}};
  if (cellrt::Status status = cell->forward(args); !status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  float expected = std::tanh(1.0f + std::tanh(1.0f));
  std::printf("jit: h2 = %f, expected %f\n", out[H], expected);
  return std::fabs(out[H] - expected) < 1e-5f ? 0 : 1;
}
