//===- ProductsTest.cpp - Watching the products of cells and layers -------===//
//
// The observers a measuring run (bench/nmt-floor, issue #47) reads the
// products of a training update with: cellrt::setProductObserver sees each
// logical product of a cell once, models::setLayerProductObserver each
// gemm() of a layer. Checked against the schedules of docs/gemm-plans.md.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Products.h"
#include "models/common/CellLayer.h"
#include "models/common/Cells.h"
#include "models/common/Linear.h"
#include "models/common/Math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>

namespace {

using cellrt::ProductRecord;
using Shape = std::tuple<ProductRecord::Kind, int64_t, int64_t, int64_t>;
constexpr ProductRecord::Kind Fwd = ProductRecord::Kind::Forward,
                              Bwd = ProductRecord::Kind::Backward,
                              Wgrad = ProductRecord::Kind::WeightGradient;

/// The products of one forward and backward of `cell` over T steps of B
/// rows, I inputs and H states, sorted.
std::vector<Shape> cellProducts(const std::string &cell, int64_t T, int64_t B,
                                int64_t I, int64_t H) {
  // Tiled steps would absorb the per-step products into their kernels.
  setenv("CELLRT_TILED_STEPS", "0", 1);
  models::ParamStore store;
  models::CellLayer layer(models::loadCell(cell), "c", I, H, store);
  models::Rng rng(1);
  for (models::Param *p : store.all())
    models::uniformInit(p->value, 0.3f, rng);
  std::vector<float> x(T * B * I, 0.5f), out(T * B * H),
      dOut(T * B * H, 0.1f), dx(T * B * I, 0.f);
  std::vector<int32_t> lengths(B, int32_t(T));
  std::vector<Shape> seen;
  cellrt::setProductObserver([&](const ProductRecord &r) {
    seen.emplace_back(r.kind, r.m, r.n, r.k);
  });
  models::CellTrace trace;
  layer.forward({{x.data()}, lengths.data(), T, B, {}, out.data()}, trace,
                true);
  layer.backward(trace, dOut.data(), {dx.data()});
  cellrt::setProductObserver({});
  std::sort(seen.begin(), seen.end());
  return seen;
}

std::vector<Shape> sorted(std::vector<Shape> shapes) {
  std::sort(shapes.begin(), shapes.end());
  return shapes;
}

/// Appends `count` copies of `shape`.
void add(std::vector<Shape> &shapes, int64_t count, Shape shape) {
  shapes.insert(shapes.end(), size_t(count), shape);
}

// ATR: XP = X·Wxᵀ hoisted over T·B rows, one [B, H, H] product a step; the
// backward a [B, H, H] product a step, dX once, and a weight gradient per
// weight over all T·B rows.
TEST(Products, AtrTrainingIsItsSchedule) {
  const int64_t T = 5, B = 3, I = 4, H = 6, N = T * B;
  std::vector<Shape> expected;
  add(expected, 1, {Fwd, N, H, I});
  add(expected, T, {Fwd, B, H, H});
  add(expected, T, {Bwd, B, H, H});
  add(expected, 1, {Bwd, N, I, H});
  add(expected, 1, {Wgrad, H, I, N});
  add(expected, 1, {Wgrad, H, H, N});
  EXPECT_EQ(cellProducts("atr", T, B, I, H), sorted(expected));
}

// GRU: [Wz;Wr;Wh] stacked over the input, [Uz;Ur] on h and Uh on r*h each
// step; the stacked weights' gradients are one product per part.
TEST(Products, GruTrainingIsItsSchedule) {
  const int64_t T = 4, B = 2, I = 5, H = 3, N = T * B;
  std::vector<Shape> expected;
  add(expected, 1, {Fwd, N, 3 * H, I});
  add(expected, T, {Fwd, B, 2 * H, H});
  add(expected, T, {Fwd, B, H, H});
  add(expected, T, {Bwd, B, H, 2 * H});
  add(expected, T, {Bwd, B, H, H});
  add(expected, 1, {Bwd, N, I, 3 * H});
  add(expected, 3, {Wgrad, H, I, N});
  add(expected, 3, {Wgrad, H, H, N});
  EXPECT_EQ(cellProducts("gru", T, B, I, H), sorted(expected));
}

// A layer's products: Y = X·Wᵀ forward; dW += dYᵀ·X and dX = dY·W back.
TEST(Products, LayerProductsAreSeenOnce) {
  const int64_t rows = 7, in = 3, out = 5;
  models::ParamStore store;
  models::Linear linear(store, "l", in, out);
  std::vector<float> x(rows * in, 0.2f), y(rows * out), dy(rows * out, 0.1f),
      dx(rows * in, 0.f);
  std::vector<std::tuple<bool, bool, int64_t, int64_t, int64_t>> seen;
  models::setLayerProductObserver([&](const models::LayerProduct &p) {
    seen.emplace_back(p.transA, p.transB, p.m, p.n, p.k);
  });
  linear.forward(x.data(), rows, y.data());
  linear.backward(x.data(), rows, dy.data(), dx.data());
  models::setLayerProductObserver({});
  linear.forward(x.data(), rows, y.data()); // no longer seen
  std::sort(seen.begin(), seen.end());
  decltype(seen) expected = {{false, false, rows, in, out},
                             {false, true, rows, out, in},
                             {true, false, out, in, rows}};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(seen, expected);
}

} // namespace
