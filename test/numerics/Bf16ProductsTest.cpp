//===- Bf16ProductsTest.cpp - Products that read bfloat16 -----------------===//
//
// A plan in bf16 precision rounds both operands of every product to
// bfloat16 and sums in f32 (runtime/GemmBf16.cpp). LibTorch defines that
// arithmetic independently: its bfloat16 conversion rounds to nearest even,
// and a float64 product of the rounded operands is what an f32 sum
// approaches. The products must match it to f32's summation error, differ
// from the f32 products by bf16's rounding, and a Cell must switch
// precision (Cell::withPrecision) without changing anything else.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Runtime.h"
#include "runtime/Gemm.h"
#include "runtime/HostDevice.h"
#include "runtime/TiledSteps.h"
#include "test/unit/CellRunner.h"

#include "gru.h"
#include "lstm.h"

#include <torch/torch.h>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

using namespace cellrt;

namespace {

std::vector<float> randomValues(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &value : values)
    value = uniform(rng);
  return values;
}

/// A stored [rows, columns] matrix with rows `stride` apart, as a float64
/// tensor of its values rounded to bfloat16 by LibTorch.
torch::Tensor roundedByTorch(const std::vector<float> &values, int64_t rows,
                             int64_t columns, int64_t stride) {
  torch::Tensor all = torch::from_blob(const_cast<float *>(values.data()),
                                       {rows, stride}, torch::kFloat32)
                          .narrow(1, 0, columns);
  return all.to(torch::kBFloat16).to(torch::kFloat64);
}

/// The largest |actual - expected| over the [rows, columns] result, relative
/// to the largest |expected|.
double relativeError(const std::vector<float> &actual, int64_t stride,
                     const torch::Tensor &expected) {
  double worst = 0, largest = 0;
  auto e = expected.accessor<double, 2>();
  for (int64_t r = 0; r < expected.size(0); ++r)
    for (int64_t c = 0; c < expected.size(1); ++c) {
      worst = std::max(worst, std::abs(actual[r * stride + c] - e[r][c]));
      largest = std::max(largest, std::abs(e[r][c]));
    }
  return worst / largest;
}

struct ProductCase {
  bool transposeA, transposeB, accumulate;
  const char *name;
};

// The executor's three products (Device.h): forward, backward, weight
// gradient.
const ProductCase kProducts[] = {
    {false, true, false, "in · weightᵀ"},
    {false, false, true, "out += in · weight"},
    {true, false, true, "out += aᵀ · b"},
};

} // namespace

TEST(Bf16Products, RoundToNearestEvenAsLibTorchDoes) {
  std::vector<float> values = randomValues(4096, 1);
  // Ties (half-way between two bfloat16s) go to the even one; the largest
  // finite values round to infinity; signed zeros, denormals and infinities
  // keep their kind.
  for (float special :
       {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, -1.0f - 0x1p-8f, 0.0f, -0.0f,
        std::numeric_limits<float>::denorm_min(), 0x1.fffffep127f,
        -0x1.fffffep127f, std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity(), 0x1.ff8p-127f})
    values.push_back(special);
  std::vector<uint16_t> ours(values.size());
  cellrt::detail::roundToBf16(values.data(), 1, values.size(), values.size(),
                              ours.data());
  torch::Tensor theirs =
      torch::from_blob(values.data(), {int64_t(values.size())})
          .to(torch::kBFloat16);
  const uint16_t *bits = static_cast<const uint16_t *>(theirs.data_ptr());
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(ours[i], bits[i]) << "value " << values[i];
  // NaN stays NaN (its payload may differ).
  float nan = std::numeric_limits<float>::quiet_NaN();
  uint16_t rounded;
  cellrt::detail::roundToBf16(&nan, 1, 1, 1, &rounded);
  uint32_t widened = uint32_t(rounded) << 16;
  float back;
  std::memcpy(&back, &widened, sizeof(back));
  EXPECT_TRUE(std::isnan(back));
}

// Odd sizes, strided rows, and an output that starts at 7 so that
// accumulation shows.
TEST(Bf16Products, MatchLibTorchOnRoundedOperands) {
  cellrt::detail::HostDevice bf16({}, Precision::BF16), f32({});
  for (const ProductCase &product : kProducts)
    for (std::array<int64_t, 3> shape :
         {std::array<int64_t, 3>{13, 37, 29}, {64, 256, 96}, {1, 200, 300}}) {
      int64_t m = shape[0], n = shape[1], k = shape[2];
      SCOPED_TRACE(std::string(product.name) + " m=" + std::to_string(m) +
                   " n=" + std::to_string(n) + " k=" + std::to_string(k));
      int64_t aRows = product.transposeA ? k : m;
      int64_t aCols = product.transposeA ? m : k;
      int64_t bRows = product.transposeB ? n : k;
      int64_t bCols = product.transposeB ? k : n;
      int64_t aStride = aCols + 3, bStride = bCols + 5, outStride = n + 2;
      std::vector<float> a = randomValues(aRows * aStride, 2);
      std::vector<float> b = randomValues(bRows * bStride, 3);
      std::vector<float> out(m * outStride, 7.0f), exact = out;
      torch::Tensor left = roundedByTorch(a, aRows, aCols, aStride);
      torch::Tensor right = roundedByTorch(b, bRows, bCols, bStride);
      torch::Tensor expected =
          torch::matmul(product.transposeA ? left.t() : left,
                        product.transposeB ? right.t() : right) +
          (product.accumulate ? 7.0 : 0.0);
      auto run = [&](cellrt::detail::HostDevice &device,
                     std::vector<float> &target) {
        if (!product.transposeA && product.transposeB)
          return device.gemmTransposedWeight(m, n, k, a.data(), aStride,
                                             b.data(), bStride, target.data(),
                                             outStride);
        if (!product.transposeA)
          return device.gemmAccumulate(m, n, k, a.data(), aStride, b.data(),
                                       bStride, target.data(), outStride);
        return device.gemmAccumulateTransposedInput(m, n, k, a.data(), aStride,
                                                    b.data(), bStride,
                                                    target.data(), outStride);
      };
      Status status = run(bf16, out);
      ASSERT_TRUE(status.ok()) << status.message();
      EXPECT_LT(relativeError(out, outStride, expected), 1e-5);
      // The f32 product of the same operands is off by bf16's rounding.
      ASSERT_TRUE(run(f32, exact).ok());
      EXPECT_GT(relativeError(exact, outStride, expected), 1e-4);
      // Padding columns are not written.
      for (int64_t r = 0; r < m; ++r)
        EXPECT_EQ(out[r * outStride + n], 7.0f);
    }
}

// A weight packed in bf16 multiplies as the plain bf16 product does; a
// device of the other precision multiplies by the plain weight instead, in
// its own precision, whatever the packed copy's.
TEST(Bf16Products, PackedWeightsRoundAsThePlainProduct) {
  const int64_t n = 192, k = 80;
  std::vector<float> weight = randomValues(n * k, 4);
  std::string error;
  auto packedBf16 =
      PackedProduct::pack(weight.data(), n, k, error, Precision::BF16);
  ASSERT_NE(packedBf16, nullptr) << error;
  auto packedF32 = PackedProduct::pack(weight.data(), n, k, error);
  ASSERT_NE(packedF32, nullptr) << error;
  EXPECT_EQ(packedBf16->precision(), Precision::BF16);
  EXPECT_EQ(packedF32->precision(), Precision::F32);
  cellrt::detail::HostDevice bf16({}, Precision::BF16), f32({});
  for (int64_t rows : {4, 10, 64}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    int64_t inStride = k + 3;
    std::vector<float> in = randomValues(rows * inStride, 5);
    auto product = [&](cellrt::detail::HostDevice &device,
                       const PackedProduct *packed) {
      std::vector<float> out(rows * n);
      Status status =
          packed ? device.gemmPacked(rows, n, k, in.data(), inStride,
                                     weight.data(), k, *packed, out.data(), n)
                 : device.gemmTransposedWeight(rows, n, k, in.data(), inStride,
                                               weight.data(), k, out.data(), n);
      EXPECT_TRUE(status.ok()) << status.message();
      return out;
    };
    std::vector<float> plainBf16 = product(bf16, nullptr);
    std::vector<float> plainF32 = product(f32, nullptr);
    auto maxDifference = [](const std::vector<float> &x,
                            const std::vector<float> &y) {
      float worst = 0;
      for (size_t i = 0; i < x.size(); ++i)
        worst = std::max(worst, std::abs(x[i] - y[i]));
      return worst;
    };
    // The packed copy multiplies (it is not the plain product again).
    int64_t multiplied = PackedProduct::multipliedSoFar();
    int64_t rounded = cellrt::detail::bf16ProductsSoFar();
    EXPECT_LT(maxDifference(product(bf16, packedBf16.get()), plainBf16), 1e-5f);
    EXPECT_EQ(PackedProduct::multipliedSoFar(), multiplied + 1);
    EXPECT_EQ(cellrt::detail::bf16ProductsSoFar(), rounded + 1);
    // Of the other precision: the plain product instead.
    multiplied = PackedProduct::multipliedSoFar();
    EXPECT_LT(maxDifference(product(bf16, packedF32.get()), plainBf16), 1e-5f);
    EXPECT_LT(maxDifference(product(f32, packedBf16.get()), plainF32), 1e-5f);
    EXPECT_EQ(PackedProduct::multipliedSoFar(), multiplied);
    EXPECT_GT(maxDifference(plainBf16, plainF32), 1e-3f);
  }
}

// A weight packed for a step's state gradient (Use::Backward) adds
// in[rows, n'] · weight[n', k'] into strided rows as the plain product
// does, in either precision, wherever the packed copy accepts the rows
// (output rows at a wider stride go through a dense copy); a packed copy
// of the wrong direction or shape is not used.
TEST(PackedProducts, BackwardUseAccumulatesAsThePlainProduct) {
  // gemmAccumulate's names: out[rows, n] += in[rows, k] · weight[k, n].
  const int64_t n = 48, k = 80, outStride = n + 5;
  std::vector<float> weight = randomValues(k * n, 6);
  for (auto [precision, inStride] : {std::pair{Precision::F32, k},
                                     {Precision::F32, k + 3},
                                     {Precision::BF16, k},
                                     {Precision::BF16, k + 3}}) {
    SCOPED_TRACE(std::string(precisionName(precision)) + ", input stride " +
                 std::to_string(inStride));

    cellrt::detail::HostDevice device({}, precision);
    std::string error;
    auto packed = PackedProduct::pack(weight.data(), k, n, error, precision,
                                      PackedProduct::Use::Backward);
    ASSERT_NE(packed, nullptr) << error;
    EXPECT_EQ(packed->use(), PackedProduct::Use::Backward);
    auto forwardUse =
        PackedProduct::pack(weight.data(), k, n, error, precision);
    ASSERT_NE(forwardUse, nullptr) << error;
    auto otherShape = PackedProduct::pack(weight.data(), n, k, error, precision,
                                          PackedProduct::Use::Backward);
    ASSERT_NE(otherShape, nullptr) << error;
    for (int64_t rows : {1, 4, 10, 64}) {
      SCOPED_TRACE("rows " + std::to_string(rows));
      std::vector<float> in = randomValues(rows * inStride, 7);
      std::vector<float> start = randomValues(rows * outStride, 8);
      auto product = [&](const PackedProduct *with) {
        std::vector<float> out = start;
        Status status =
            with ? device.gemmAccumulatePacked(rows, n, k, in.data(), inStride,
                                               weight.data(), n, *with,
                                               out.data(), outStride)
                 : device.gemmAccumulate(rows, n, k, in.data(), inStride,
                                         weight.data(), n, out.data(),
                                         outStride);
        EXPECT_TRUE(status.ok()) << status.message();
        return out;
      };
      std::vector<float> plain = product(nullptr);
      int64_t multiplied = PackedProduct::multipliedSoFar();
      std::vector<float> viaPacked = product(packed.get());
      // bf16 multiplies the rows' dense rounded copy, which the packed
      // layout always takes; f32 (which the runtime does not pack for this
      // direction) depends on oneDNN's choice for the shape.
      bool accepted = packed->accepts(rows, inStride, outStride);
      if (precision == Precision::BF16)
        EXPECT_TRUE(accepted);
      EXPECT_EQ(PackedProduct::multipliedSoFar(),
                multiplied + (accepted ? 1 : 0));
      float largest = 0, worst = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < outStride; ++c) {
          size_t i = r * outStride + c;
          if (c >= n) {
            // Padding columns keep their values.
            EXPECT_EQ(viaPacked[i], start[i]);
            continue;
          }
          largest = std::max(largest, std::abs(plain[i]));
          worst = std::max(worst, std::abs(viaPacked[i] - plain[i]));
        }
      EXPECT_LT(worst / largest, 1e-5f);
      // Copies packed for the forward direction, or as a [k, n] weight,
      // are not multiplied by.
      multiplied = PackedProduct::multipliedSoFar();
      EXPECT_EQ(product(forwardUse.get()), plain);
      EXPECT_EQ(product(otherShape.get()), plain);
      EXPECT_EQ(PackedProduct::multipliedSoFar(), multiplied);
    }
  }
}

namespace {

/// The largest difference of an array of `x` from `y`'s, relative to the
/// largest value of `y`'s array (small gradients are not hidden by large
/// outputs).
double maxRelativeDifference(const cellrt_test::Results &x,
                             const cellrt_test::Results &y) {
  EXPECT_EQ(x.arrays.size(), y.arrays.size());
  double result = 0;
  for (size_t a = 0; a < x.arrays.size(); ++a) {
    double worst = 0, largest = 0;
    for (size_t i = 0; i < x.arrays[a].size(); ++i) {
      worst =
          std::max(worst, double(std::abs(x.arrays[a][i] - y.arrays[a][i])));
      largest = std::max(largest, double(std::abs(y.arrays[a][i])));
    }
    if (worst > 0)
      result = std::max(result, worst / largest);
  }
  return result;
}

/// Restores the tiled-steps mode and the thread count a test found, even
/// when an assertion ends it early.
struct ScheduleGuard {
  cellrt::detail::TiledMode mode = cellrt::detail::tiledStepsMode();
  int threads = cellrt::getNumThreads();
  ~ScheduleGuard() {
    cellrt::detail::setTiledSteps(mode);
    cellrt::setNumThreads(threads);
  }
};

} // namespace

// A cell compiled for f32 runs in bf16 and back: the plan says so, the
// results move by bf16's rounding (forward, training, a step with and
// without packed weights), and returning to f32 gives its bits again.
// The per-step schedule's products (the tiled steps' are
// TiledStepsRoundAsThePerStepSchedule's).
TEST(Bf16Products, CellsSwitchPrecision) {
  ScheduleGuard guard;
  cellrt::detail::setTiledSteps(cellrt::detail::TiledMode::Off);
  for (cellrt_image image : {cellc_lstm_image(), cellc_gru_image()}) {
    Expected<Cell> f32 = Cell::load(image);
    ASSERT_TRUE(f32) << f32.error();
    SCOPED_TRACE(f32->getPlan().cellName);
    EXPECT_EQ(f32->getPrecision(), Precision::F32);
    Expected<Cell> bf16 = f32->withPrecision(Precision::BF16);
    ASSERT_TRUE(bf16) << bf16.error();
    EXPECT_EQ(bf16->getPrecision(), Precision::BF16);
    EXPECT_EQ(bf16->getPlan().precision, Precision::BF16);
    EXPECT_NE(printPlan(bf16->getPlan()).find("precision bf16"),
              std::string::npos);
    Expected<Cell> back = bf16->withPrecision(Precision::F32);
    ASSERT_TRUE(back) << back.error();

    cellrt_test::ProblemShape shape;
    shape.T = 20;
    shape.B = 8;
    shape.firstDim = 32;
    shape.lengths = {20, 3, 1, 20, 17, 9, 20, 4};
    cellrt_test::Problem problem(f32->getPlan(), 7, shape);
    std::map<bool, int64_t> bf16Products;
    for (bool train : {false, true}) {
      SCOPED_TRACE(train ? "training" : "inference");
      int64_t before = cellrt::detail::bf16ProductsSoFar();
      auto reference = cellrt_test::run(*f32, problem, false, train);
      EXPECT_EQ(cellrt::detail::bf16ProductsSoFar(), before);
      int64_t packedProducts = PackedProduct::multipliedSoFar();
      auto rounded = cellrt_test::run(*bf16, problem, false, train);
      bf16Products[train] = cellrt::detail::bf16ProductsSoFar() - before;
      // 20 steps of 8 rows: each step's recurrent product multiplies by a
      // weight packed for the call, and in training so does each step's
      // state gradient.
      EXPECT_GE(PackedProduct::multipliedSoFar() - packedProducts,
                train ? 2 * shape.T : shape.T);
      double difference = maxRelativeDifference(rounded, reference);
      EXPECT_GT(difference, 1e-5);
      EXPECT_LT(difference, 3e-2);
      auto again = cellrt_test::run(*back, problem, false, train);
      EXPECT_EQ(maxRelativeDifference(again, reference), 0.0);
    }
    // Backward reads bf16 too: a state gradient's product per step, and
    // the weight gradients, beyond what forward multiplies.
    EXPECT_GT(bf16Products[false], shape.T);
    EXPECT_GE(bf16Products[true], 2 * bf16Products[false]);
    Expected<PackedWeights> packedBf16 =
        bf16->packWeights(problem.paramArrays());
    Expected<PackedWeights> packedF32 = f32->packWeights(problem.paramArrays());
    ASSERT_TRUE(packedBf16 && packedF32);
    auto step = cellrt_test::runStep(*bf16, problem);
    EXPECT_GT(maxRelativeDifference(step, cellrt_test::runStep(*f32, problem)),
              1e-5);
    EXPECT_LT(maxRelativeDifference(
                  cellrt_test::runStep(*bf16, problem, &*packedBf16), step),
              1e-5);
    EXPECT_LT(maxRelativeDifference(
                  cellrt_test::runStep(*bf16, problem, &*packedF32), step),
              1e-5);
  }
}

// A decoder trained one step at a time calls forward and backward with
// T = 1 and its PackedWeights: packed for training, in bf16 the backward's
// state gradient multiplies by the copy packed for that direction
// (without it each step's product rounded the whole weight again: ~1% of
// a DeepGRU 2+2 update), to the plain product's result within f32's
// summation error; packed for inference, or in f32 (sgemm reads the
// weight as fast), nothing is packed for backward.
TEST(Bf16Products, StepTrainingReadsWeightsPackedForBackward) {
  ScheduleGuard guard;
  if (!cellrt::detail::bf16Available().ok())
    GTEST_SKIP() << "no bf16 products on this CPU";
  for (cellrt::detail::TiledMode mode :
       {cellrt::detail::TiledMode::Off, cellrt::detail::TiledMode::On}) {
    cellrt::detail::setTiledSteps(mode);
    for (cellrt_image image : {cellc_lstm_image(), cellc_gru_image()}) {
      Expected<Cell> f32 = Cell::load(image);
      ASSERT_TRUE(f32) << f32.error();
      SCOPED_TRACE(f32->getPlan().cellName);
      Expected<Cell> bf16 = f32->withPrecision(Precision::BF16);
      ASSERT_TRUE(bf16) << bf16.error();
      cellrt_test::ProblemShape shape;
      shape.T = 1;
      shape.B = 16;
      shape.firstDim = 32;
      shape.lengths.assign(shape.B, 1);
      cellrt_test::Problem problem(f32->getPlan(), 9, shape);
      for (const Cell *cell : {&*f32, &*bf16}) {
        bool rounds = cell->getPrecision() == Precision::BF16;
        SCOPED_TRACE(rounds ? "bf16" : "f32");
        auto plain = cellrt_test::run(*cell, problem, false, /*train=*/true);
        // A training call by weights packed for `purpose`: its packed
        // multiplies and its results.
        auto trainBy = [&](PackFor purpose) {
          Expected<PackedWeights> packed =
              cell->packWeights(problem.paramArrays(), purpose);
          EXPECT_TRUE(packed) << packed.error();
          int64_t multiplied = PackedProduct::multipliedSoFar();
          auto results = cellrt_test::run(*cell, problem, false,
                                          /*train=*/true, nullptr, &*packed);
          return std::make_pair(PackedProduct::multipliedSoFar() - multiplied,
                                results);
        };
        auto [forInference, inferenceResults] = trainBy(PackFor::Inference);
        auto [forTraining, trainingResults] = trainBy(PackFor::Training);
        // Packed for inference: the forward's products alone.
        if (rounds)
          EXPECT_GT(forTraining, forInference);
        else
          EXPECT_EQ(forTraining, forInference);
        EXPECT_LT(maxRelativeDifference(inferenceResults, plain), 1e-5);
        EXPECT_LT(maxRelativeDifference(trainingResults, plain), 1e-5);
      }
    }
  }
}

// The tiled steps in bf16 (libxsmm's bf16 kernels, weights packed in VNNI
// pairs, each member's input rows rounded per step) round the same
// operands as the per-step schedule and only sum them in another order:
// inference (with the input products per step, I = H = 128), training
// (outputs, states and every gradient) and a decoding step by packed
// weights, on one thread and on two, agree with it to f32's summation
// error, and differ from the f32 tiles by bf16's rounding; the packed
// weights keep the bf16 panels of their first step.
TEST(Bf16Products, TiledStepsRoundAsThePerStepSchedule) {
  using cellrt::detail::setTiledSteps;
  using cellrt::detail::TiledMode;
  if (!cellrt::detail::bf16Available().ok() ||
      !cellrt::detail::tiledStepsAvailable())
    GTEST_SKIP() << "no bf16 products or no tiled steps on this build/CPU";
  ScheduleGuard guard;
  for (cellrt_image image : {cellc_lstm_image(), cellc_gru_image()}) {
    Expected<Cell> f32 = Cell::load(image);
    ASSERT_TRUE(f32) << f32.error();
    Expected<Cell> bf16 = f32->withPrecision(Precision::BF16);
    ASSERT_TRUE(bf16) << bf16.error();
    cellrt_test::ProblemShape shape;
    shape.T = 8;
    shape.B = 8;
    shape.firstDim = 128;
    shape.dims = {{"H", 128}, {"I", 128}};
    shape.lengths = {8, 3, 1, 8, 7, 5, 8, 4};
    cellrt_test::Problem problem(f32->getPlan(), 11, shape);
    Expected<PackedWeights> packed = bf16->packWeights(problem.paramArrays());
    ASSERT_TRUE(packed) << packed.error();
    for (int threads : {1, 2})
      for (bool train : {false, true}) {
        SCOPED_TRACE(f32->getPlan().cellName + ", " + std::to_string(threads) +
                     " threads, " + (train ? "training" : "inference"));
        cellrt::setNumThreads(threads);
        setTiledSteps(TiledMode::Off);
        auto perStep = cellrt_test::run(*bf16, problem, false, train);
        setTiledSteps(TiledMode::On);
        int64_t calls = cellrt::detail::tiledStepCalls();
        int64_t failures = cellrt::detail::tiledStepFailures();
        auto tiled = cellrt_test::run(*bf16, problem, false, train);
        if (cellrt::detail::tiledStepFailures() != failures)
          GTEST_SKIP() << "libxsmm has no bf16 kernels on this CPU";
        EXPECT_EQ(cellrt::detail::tiledStepCalls() - calls, train ? 2 : 1);
        auto tiledF32 = cellrt_test::run(*f32, problem, false, train);
        EXPECT_LT(maxRelativeDifference(tiled, perStep), 1e-4);
        EXPECT_GT(maxRelativeDifference(tiled, tiledF32), 1e-4);
        if (train)
          continue;
        calls = cellrt::detail::tiledStepCalls();
        auto step = cellrt_test::runStep(*bf16, problem, &*packed);
        int64_t packs = cellrt::detail::tiledPanelPacks();
        auto again = cellrt_test::runStep(*bf16, problem, &*packed);
        EXPECT_EQ(cellrt::detail::tiledPanelPacks(), packs);
        EXPECT_EQ(cellrt::detail::tiledStepCalls() - calls, 2);
        EXPECT_EQ(again.arrays, step.arrays);
        setTiledSteps(TiledMode::Off);
        auto stepPerStep = cellrt_test::runStep(*bf16, problem, &*packed);
        EXPECT_LT(maxRelativeDifference(step, stepPerStep), 1e-4);
      }
  }
}

namespace {

/// The products of a backward pass after its steps, on small operands:
/// G [96, 64] is a stacked gradient of 4 parts, X [96, 32] the inputs.
/// dX = G · W, then each part's weight gradient += G[:, part]ᵀ · X; then X
/// is overwritten by a product and read again; then rows 32-95 of a part
/// and of X (views at a row and a column inside the copies), and
/// G[:, :16] · G[:, :16]ᵀ (a copy read as a transposed second operand).
std::vector<std::vector<float>> backwardProducts() {
  using cellrt::detail::gemmBf16;
  constexpr int64_t rows = 96, stacked = 64, part = 16, width = 32;
  std::vector<float> g = randomValues(rows * stacked, 11),
                     x = randomValues(rows * width, 12),
                     w = randomValues(stacked * width, 13);
  std::vector<std::vector<float>> results;
  std::vector<float> dx(rows * width, 0.0f);
  EXPECT_TRUE(gemmBf16(false, false, rows, width, stacked, g.data(), stacked,
                       w.data(), width, dx.data(), width, 0.0f)
                  .ok());
  results.push_back(dx);
  for (int64_t first = 0; first < stacked; first += part) {
    std::vector<float> gradient = randomValues(part * width, 14);
    EXPECT_TRUE(gemmBf16(true, false, part, width, rows, g.data() + first,
                         stacked, x.data(), width, gradient.data(), width, 1.0f)
                    .ok());
    results.push_back(gradient);
  }
  // X = G[:, :32] · W[:32, :]: the copy of X kept above is stale now.
  EXPECT_TRUE(gemmBf16(false, false, rows, width, width, g.data(), stacked,
                       w.data(), width, x.data(), width, 0.0f)
                  .ok());
  std::vector<float> again(part * width, 0.0f);
  EXPECT_TRUE(gemmBf16(true, false, part, width, rows, g.data(), stacked,
                       x.data(), width, again.data(), width, 0.0f)
                  .ok());
  results.push_back(again);
  constexpr int64_t firstRow = 32;
  std::vector<float> lower(part * width, 0.0f);
  EXPECT_TRUE(gemmBf16(true, false, part, width, rows - firstRow,
                       g.data() + firstRow * stacked + part, stacked,
                       x.data() + firstRow * width, width, lower.data(), width,
                       0.0f)
                  .ok());
  results.push_back(lower);
  std::vector<float> gram(rows * rows, 0.0f);
  EXPECT_TRUE(gemmBf16(false, true, rows, rows, part, g.data(), stacked,
                       g.data(), stacked, gram.data(), rows, 0.0f)
                  .ok());
  results.push_back(gram);
  return results;
}

} // namespace

// KeepRoundedOperands rounds an operand once for a run of products: the
// parts of the stacked gradient are read from its copy made for dX, and X
// from the first part's copy, with the same bits as rounding each again;
// a product that overwrites X drops its copy.
TEST(Bf16Products, KeptOperandsGiveTheSameBits) {
  if (!cellrt::detail::bf16Available().ok())
    GTEST_SKIP() << "no bf16 products on this CPU";
  auto rounding = backwardProducts();
  int64_t before = cellrt::detail::bf16OperandsReused();
  std::vector<std::vector<float>> kept;
  {
    cellrt::detail::KeepRoundedOperands keep(true);
    kept = backwardProducts();
  }
  // 4 parts of G, X for parts 2-4; then G[:, :32], W's first 32 rows and
  // G[:, :16], but not the overwritten X; then rows 32-95 of G's second
  // part and of the new X, and G[:, :16] as both operands.
  EXPECT_EQ(cellrt::detail::bf16OperandsReused() - before, 14);
  ASSERT_EQ(kept.size(), rounding.size());
  for (size_t i = 0; i < kept.size(); ++i)
    EXPECT_EQ(kept[i], rounding[i]) << "product " << i;
  before = cellrt::detail::bf16OperandsReused();
  backwardProducts();
  EXPECT_EQ(cellrt::detail::bf16OperandsReused(), before);
}

// A copy lent to a scope (KeepRoundedOperands::lend) is read by that
// scope's products and by no product after it ends, even while an outer
// scope keeps its own copies: the caller's buffer may be gone by then.
TEST(Bf16Products, ALentCopyEndsWithTheScopeThatLentIt) {
  if (!cellrt::detail::bf16Available().ok())
    GTEST_SKIP() << "no bf16 products on this CPU";
  const int64_t m = 8, n = 16, k = 32;
  std::vector<float> a = randomValues(m * k, 11), b = randomValues(k * n, 12);
  auto product = [&] {
    std::vector<float> out(m * n, 0.25f);
    EXPECT_TRUE(cellrt::multiply(Precision::BF16, false, false, m, n, k,
                                 a.data(), k, b.data(), n, 0.0f, out.data(), n)
                    .ok());
    return out;
  };
  std::vector<float> expected = product();
  std::vector<uint16_t> zeros(m * k, 0);
  KeepRoundedOperands outer(true);
  {
    KeepRoundedOperands inner(true);
    inner.lend(a.data(), m, k, k, zeros.data());
    EXPECT_EQ(product(), std::vector<float>(m * n, 0.0f));
  }
  EXPECT_EQ(product(), expected);
}

// A weight packed for oneDNN's matmul that writes over an operand whose
// rounded copy a scope keeps makes that copy stale, as gemmBf16's own
// products do: the next product rounds the new values.
TEST(Bf16Products, APackedProductDropsTheCopiesItOverwrites) {
  if (!cellrt::detail::bf16Available().ok())
    GTEST_SKIP() << "no bf16 products on this CPU";
  const int64_t m = 8, n = 16, k = 32;
  std::vector<float> x = randomValues(m * k, 13), b = randomValues(k * n, 14);
  std::vector<float> in = randomValues(m * k, 15), w = randomValues(k * k, 16);
  std::string error;
  auto packed = PackedProduct::pack(w.data(), k, k, error, Precision::BF16);
  ASSERT_NE(packed, nullptr) << error;
  auto product = [&] {
    std::vector<float> out(m * n, 0.25f);
    EXPECT_TRUE(cellrt::multiply(Precision::BF16, false, false, m, n, k,
                                 x.data(), k, b.data(), n, 0.0f, out.data(), n)
                    .ok());
    return out;
  };
  std::vector<float> before, after;
  {
    KeepRoundedOperands keep(true);
    before = product();
    // x = in · wᵀ, through the packed copy.
    ASSERT_TRUE(packed->multiply(m, in.data(), k, x.data(), k).ok());
    after = product();
  }
  EXPECT_NE(after, before);
  EXPECT_EQ(after, product());
}

// A bf16 backward keeps its operands' copies for the products after the
// steps (LSTM: the input gradient and 8 weight gradients' parts read 3
// operands), and an f32 one rounds nothing.
TEST(Bf16Products, BackwardRoundsEachOperandOnce) {
  ScheduleGuard guard;
  if (!cellrt::detail::bf16Available().ok())
    GTEST_SKIP() << "no bf16 products on this CPU";
  Expected<Cell> f32 = Cell::load(cellc_lstm_image());
  ASSERT_TRUE(f32) << f32.error();
  Expected<Cell> bf16 = f32->withPrecision(Precision::BF16);
  ASSERT_TRUE(bf16) << bf16.error();
  cellrt_test::ProblemShape shape;
  shape.T = 12;
  shape.B = 4;
  shape.firstDim = 32;
  shape.lengths = {12, 5, 1, 9};
  cellrt_test::Problem problem(f32->getPlan(), 5, shape);
  using cellrt::detail::TiledMode;
  for (TiledMode mode : {TiledMode::Off, TiledMode::On}) {
    cellrt::detail::setTiledSteps(mode);
    int64_t before = cellrt::detail::bf16OperandsReused();
    cellrt_test::run(*f32, problem, false, /*train=*/true);
    EXPECT_EQ(cellrt::detail::bf16OperandsReused(), before);
    cellrt_test::run(*bf16, problem, false, /*train=*/true);
    // dv0's 4 parts from dX's copy, x and h for 3 parts each.
    EXPECT_EQ(cellrt::detail::bf16OperandsReused() - before, 10);
  }
}
