//===- InputProductsTest.cpp - Products of inputs given by the caller -----===//
//
// Cell::withInputProducts: for every seed cell, both directions, training
// mode, the derived cell fed the products X W^T (computed here) gives the
// original cell's outputs and states, and its product gradients, pushed
// through the products here (dX += dP W, dW += dP^T X), give the original's
// input and parameter gradients.
//
//===----------------------------------------------------------------------===//

#include "CellRunner.h"

#include "jit/Jit.h"
#include "test/support/SeedCells.h"

#include <cmath>

using namespace cellrt_test;

namespace {

/// A cell of cells/ compiled through the JIT (no cache), kept with its code.
struct SeedCell {
  explicit SeedCell(const std::string &name) {
    cellc::jit::CompileOptions options;
    options.cacheDir = "";
    auto result = cellc::jit::compileFile(
        CELLC_SOURCE_DIR "/cells/" + name + ".cell", options);
    EXPECT_TRUE(result.ok()) << result.error();
    code = std::make_unique<cellc::jit::CompiledCell>(std::move(*result));
    auto loaded = Cell::load(code->image());
    EXPECT_TRUE(loaded.ok()) << loaded.error();
    cell = std::make_unique<Cell>(std::move(*loaded));
  }
  std::unique_ptr<cellc::jit::CompiledCell> code;
  std::unique_ptr<Cell> cell;
};

/// One product: its stacked weight (rows x cols) and its source input.
struct Product {
  std::vector<float> weight;
  int64_t rows = 0, cols = 0;
  size_t source = 0;
};

Product productOf(const Cell &cell, const Problem &problem,
                  const InputProduct &made) {
  const Plan &plan = cell.getPlan();
  const WeightDecl &decl = *plan.findWeight(made.weight);
  Product product;
  product.rows = *plan.weightRows(decl).evaluate(problem.dims);
  product.cols = *plan.weightCols(decl).evaluate(problem.dims);
  for (const std::string &param : decl.params) {
    const std::vector<float> &values = problem.params.at(param).first;
    product.weight.insert(product.weight.end(), values.begin(), values.end());
  }
  product.source = size_t(plan.inputIndex(made.source));
  return product;
}

/// out[r, o] = sum_k x[r, k] w[o, k] over n rows.
std::vector<float> times(const std::vector<float> &x, const Product &p,
                         int64_t n) {
  std::vector<float> out(n * p.rows);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < p.rows; ++o) {
      double sum = 0;
      for (int64_t k = 0; k < p.cols; ++k)
        sum += double(x[r * p.cols + k]) * p.weight[o * p.cols + k];
      out[r * p.rows + o] = float(sum);
    }
  return out;
}

void expectNear(const std::vector<float> &ours,
                const std::vector<float> &expected, const std::string &what) {
  ASSERT_EQ(ours.size(), expected.size()) << what;
  for (size_t i = 0; i < ours.size(); ++i)
    ASSERT_NEAR(ours[i], expected[i], 2e-4 * (1 + std::fabs(expected[i])))
        << what << " [" << i << "]";
}

class InputProductsTest
    : public testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(InputProductsTest, DerivedCellMatchesTheOriginal) {
  auto [name, reverse] = GetParam();
  SeedCell seed(name);
  const Cell &cell = *seed.cell;
  std::vector<InputProduct> made;
  auto derived = cell.withInputProducts(made);
  ASSERT_TRUE(derived.ok()) << derived.error();
  ASSERT_FALSE(made.empty()) << name << " hoists no product";
  const Plan &plan = cell.getPlan(), &derivedPlan = derived->getPlan();

  Problem problem(plan, 7);
  const int64_t rows = problem.T * problem.B;
  Results original = run(cell, problem, reverse, /*train=*/true);

  // The derived problem: the original's arrays, the products as inputs.
  Problem given = problem;
  given.inputs.clear();
  given.inputWidths.clear();
  std::vector<Product> products;
  for (const VectorDecl &input : derivedPlan.inputs) {
    int64_t index = plan.inputIndex(input.name);
    if (index >= 0) {
      given.inputs.push_back(problem.inputs[index]);
      given.inputWidths.push_back(problem.inputWidths[index]);
      continue;
    }
    for (const InputProduct &product : made)
      if (product.input == input.name)
        products.push_back(productOf(cell, problem, product));
    given.inputs.push_back(
        times(problem.inputs[products.back().source], products.back(), rows));
    given.inputWidths.push_back(products.back().rows);
  }
  Results ours = run(*derived, given, reverse, /*train=*/true);

  // Forward: output, probes and final states come first in both.
  size_t forwardArrays = 1 + plan.probes.size() + plan.states.size();
  for (size_t i = 0; i < forwardArrays; ++i)
    expectNear(ours.arrays[i], original.arrays[i], "forward array " +
                                                       std::to_string(i));
  // Backward: each product's gradient (past the 0.25 the runner starts
  // arrays at) goes through the product into its source and weight.
  size_t ourInputs = forwardArrays, theirInputs = forwardArrays;
  std::vector<std::vector<float>> dInputs(plan.inputs.size());
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    dInputs[i].assign(rows * problem.inputWidths[i], 0.25f);
  std::map<std::string, std::vector<float>> dParams;
  size_t ourParams = ourInputs + derivedPlan.inputs.size() + plan.states.size();
  for (size_t k = 0; k < plan.params.size(); ++k)
    dParams[plan.params[k].name] = ours.arrays[ourParams + k];
  for (size_t i = 0, p = 0; i < derivedPlan.inputs.size(); ++i) {
    const std::vector<float> &gradient = ours.arrays[ourInputs + i];
    int64_t index = plan.inputIndex(derivedPlan.inputs[i].name);
    if (index >= 0) {
      for (size_t k = 0; k < gradient.size(); ++k)
        dInputs[index][k] += gradient[k] - 0.25f;
      continue;
    }
    const Product &product = products[p++];
    const std::vector<float> &x = problem.inputs[product.source];
    std::vector<double> dWeight(product.rows * product.cols, 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < product.rows; ++o) {
        double d = gradient[r * product.rows + o] - 0.25f;
        for (int64_t k = 0; k < product.cols; ++k) {
          dInputs[product.source][r * product.cols + k] +=
              float(d * product.weight[o * product.cols + k]);
          dWeight[o * product.cols + k] += d * x[r * product.cols + k];
        }
      }
    // Split the stacked weight's gradient among its params.
    const WeightDecl &decl = *plan.findWeight(made[p - 1].weight);
    size_t offset = 0;
    for (const std::string &param : decl.params)
      for (float &value : dParams[param])
        value += float(dWeight[offset++]);
  }
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    expectNear(dInputs[i], original.arrays[theirInputs + i],
               "d" + plan.inputs[i].name);
  size_t theirParams = theirInputs + plan.inputs.size() + plan.states.size();
  for (size_t s = 0; s < plan.states.size(); ++s)
    expectNear(ours.arrays[ourInputs + derivedPlan.inputs.size() + s],
               original.arrays[theirInputs + plan.inputs.size() + s],
               "d" + plan.states[s].name + "0");
  for (size_t k = 0; k < plan.params.size(); ++k)
    expectNear(dParams[plan.params[k].name],
               original.arrays[theirParams + k], "d" + plan.params[k].name);
}

INSTANTIATE_TEST_SUITE_P(
    SeedCells, InputProductsTest,
    testing::Combine(testing::ValuesIn(cellc_test::seedCellNames()), testing::Bool()),
    [](const auto &info) {
      return std::get<0>(info.param) +
             (std::get<1>(info.param) ? "Reverse" : "Forward");
    });

} // namespace
