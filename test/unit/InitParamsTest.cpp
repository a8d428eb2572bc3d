//===- InitParamsTest.cpp - Params drawn from a seed ----------------------===//
//
// The initialisers' text in plans, the drawn values' ranges and moments,
// orthogonality, the fallback, the errors, and the same values through
// Cell::initParams, initArray and the C API (cellc run's and Python's
// tests pin the same golden values).
//
//===----------------------------------------------------------------------===//

#include "cellrt/Runtime.h"
#include "cellrt/cellrt.h"
#include "test/support/PlanText.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

using namespace cellrt;

namespace {

/// A cell with every scheme, a param with none of each rank, and a wide
/// matrix. Its kernel does nothing: only the params matter here.
const char *const initPlan = "cellc-plan 1\n"
                             "cell init\n"
                             "dims H I\n"
                             "input x I\n"
                             "state h H\n"
                             "param W 4*H I init uniform 0.05\n"
                             "param U 4*H H init orthogonal\n"
                             "param Wide H 3*H init orthogonal\n"
                             "param N H I init normal 0.5\n"
                             "param F H I init fan_in\n"
                             "param G H I init fan_out\n"
                             "param bf H init constant 1\n"
                             "param b H\n"
                             "param V H I\n"
                             "output H\n"
                             "step kernel 0 input:x state:h next:h out\n";

void noKernel(int64_t, int64_t, int64_t, const int32_t *, const int64_t *,
              float *const *, const int64_t *) {}
const cellrt_kernel_fn kernels[] = {noKernel};
const char *const kernelNames[] = {"none"};

cellrt_image image() {
  return {cellc_test::planTables(initPlan), kernels, kernelNames, 1};
}

constexpr int64_t H = 24, I = 40;

/// Every param of initPlan at H, I, as the drivers hold them.
struct Params {
  std::map<std::string, std::vector<float>> values;
  std::map<std::string, std::vector<int64_t>> shapes = {
      {"W", {4 * H, I}}, {"U", {4 * H, H}}, {"Wide", {H, 3 * H}},
      {"N", {H, I}},     {"F", {H, I}},     {"G", {H, I}},
      {"bf", {H}},       {"b", {H}},        {"V", {H, I}}};

  Params() {
    for (const auto &[name, shape] : shapes) {
      int64_t count = 1;
      for (int64_t extent : shape)
        count *= extent;
      // Not a value any scheme draws: shows what was left alone.
      values[name].assign(count, -7.0f);
    }
  }

  std::map<std::string, MutableArray>
  arrays(std::vector<std::string> names = {}) {
    std::map<std::string, MutableArray> result;
    for (auto &[name, data] : values)
      if (names.empty() ||
          std::find(names.begin(), names.end(), name) != names.end())
        result[name] = {data.data(), shapes[name]};
    return result;
  }
};

Cell loadCell() {
  Expected<Cell> cell = Cell::load(image());
  EXPECT_TRUE(cell.ok()) << cell.error();
  return std::move(*cell);
}

struct Moments {
  double mean = 0, variance = 0, min = INFINITY, max = -INFINITY;
};

Moments momentsOf(const std::vector<float> &values) {
  Moments m;
  for (float v : values) {
    m.mean += v;
    m.min = std::min<double>(m.min, v);
    m.max = std::max<double>(m.max, v);
  }
  m.mean /= values.size();
  for (float v : values)
    m.variance += (v - m.mean) * (v - m.mean);
  m.variance /= values.size();
  return m;
}

/// Every value in [-bound, bound], and not all of one sign.
void expectWithin(const std::vector<float> &values, double bound,
                  const char *what) {
  Moments m = momentsOf(values);
  EXPECT_GE(m.min, -static_cast<float>(bound)) << what;
  EXPECT_LE(m.max, static_cast<float>(bound)) << what;
  EXPECT_LT(m.min, 0) << what;
  EXPECT_GT(m.max, 0) << what;
}

/// Uniform in [-bound, bound]: every value inside, the extremes near the
/// bounds, mean 0 and variance bound^2 / 3 within 5 standard errors (the
/// variance's relative one is sqrt(0.8 / n) for a uniform).
void expectUniform(const std::vector<float> &values, double bound,
                   const char *what) {
  expectWithin(values, bound, what);
  Moments m = momentsOf(values);
  double n = values.size(), variance = bound * bound / 3;
  EXPECT_LT(m.min, -0.98 * bound) << what;
  EXPECT_GT(m.max, 0.98 * bound) << what;
  EXPECT_NEAR(m.mean, 0, 5 * std::sqrt(variance / n)) << what;
  EXPECT_NEAR(m.variance, variance, 5 * std::sqrt(0.8 / n) * variance) << what;
}

/// rows x cols (row-major) times its transpose, or the transpose times
/// it, is the identity within 1e-5.
void expectOrthonormal(const std::vector<float> &q, int64_t rows, int64_t cols,
                       bool columns, const char *what) {
  int64_t n = columns ? cols : rows, k = columns ? rows : cols;
  auto at = [&](int64_t i, int64_t j) {
    return double(columns ? q[j * cols + i] : q[i * cols + j]);
  };
  double worst = 0;
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < n; ++b) {
      double dot = 0;
      for (int64_t j = 0; j < k; ++j)
        dot += at(a, j) * at(b, j);
      worst = std::max(worst, std::fabs(dot - (a == b ? 1.0 : 0.0)));
    }
  EXPECT_LT(worst, 1e-5) << what;
}

} // namespace

//===----------------------------------------------------------------------===//
// The schemes' text and rules
//===----------------------------------------------------------------------===//

TEST(InitSchemeTest, TextReadsBack) {
  for (const InitScheme &scheme :
       {InitScheme::constant(1), InitScheme::constant(-2.5e-5),
        InitScheme::uniform(0.05), InitScheme::normal(0.02),
        InitScheme::orthogonal(), InitScheme::fanIn(), InitScheme::fanOut(),
        InitScheme::none()}) {
    std::optional<InitScheme> parsed = InitScheme::parse(scheme.str());
    ASSERT_TRUE(parsed) << scheme.str();
    EXPECT_EQ(*parsed, scheme) << scheme.str();
  }
  EXPECT_EQ(InitScheme::uniform(0.05).str(), "uniform 0.05");
  EXPECT_EQ(InitScheme::constant(1).str(), "constant 1");
  EXPECT_EQ(InitScheme::fanIn().str(), "fan_in");
}

TEST(InitSchemeTest, RefusesWhatTheRulesForbid) {
  for (const char *text :
       {"uniform", "uniform -1", "uniform 0", "normal nan", "normal inf",
        "uniform 1e400", "constant 1e39", "orthogonal 1", "fan_in 2", "xavier",
        "uniform 0.1 0.2", "uniform 0.1x", ""})
    EXPECT_FALSE(InitScheme::parse(text)) << text;
  EXPECT_EQ(checkInitRank(InitScheme::orthogonal(), 1),
            "'orthogonal' needs a matrix param [R, C], not a vector");
  EXPECT_EQ(checkInitRank(InitScheme::orthogonal(), 2), "");
  EXPECT_EQ(checkInitValue(InitScheme::normal(-1)),
            "the standard deviation of 'normal' must be positive, got -1");
}

TEST(InitSchemeTest, ReadsSchemesAsCellsWriteThem) {
  EXPECT_EQ(InitScheme::parseWritten("uniform(0.1)"), InitScheme::uniform(0.1));
  EXPECT_EQ(InitScheme::parseWritten("constant(-2)"), InitScheme::constant(-2));
  EXPECT_EQ(InitScheme::parseWritten("fan_in()"), InitScheme::fanIn());
  EXPECT_EQ(InitScheme::parseWritten("normal 0.5"), InitScheme::normal(0.5));
  for (const char *text : {"uniform(0.1", "uniform()", "orthogonal(1)",
                           "uniform(-1)", "normal(0.1, 2)"})
    EXPECT_FALSE(InitScheme::parseWritten(text)) << text;
}

//===----------------------------------------------------------------------===//
// The plan's `init`
//===----------------------------------------------------------------------===//

TEST(InitPlanTest, ParsesAndPrintsInitialisers) {
  Expected<Plan> plan = cellc_test::readPlanText(initPlan);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->findParam("W")->init, InitScheme::uniform(0.05));
  EXPECT_EQ(plan->findParam("bf")->init, InitScheme::constant(1));
  EXPECT_TRUE(plan->findParam("b")->init.isNone());
  EXPECT_EQ(printPlan(*plan), initPlan);
}

// A dimension may be called `init`; the keyword is told apart by what
// follows it.
TEST(InitPlanTest, DimensionsNamedInit) {
  std::string text = "cellc-plan 1\ncell c\ndims init H\ninput x H\n"
                     "state h H\nparam W init H init orthogonal\n"
                     "param V H init\nparam b init init constant 2\n"
                     "param c init\noutput H\n"
                     "step kernel 0 input:x state:h next:h out\n";
  Expected<Plan> plan = cellc_test::readPlanText(text);
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan->findParam("W")->shape.size(), 2u);
  EXPECT_EQ(plan->findParam("W")->init, InitScheme::orthogonal());
  EXPECT_EQ(plan->findParam("V")->shape.size(), 2u);
  EXPECT_EQ(plan->findParam("b")->shape[0].str(), "init");
  EXPECT_EQ(plan->findParam("b")->init, InitScheme::constant(2));
  EXPECT_TRUE(plan->findParam("c")->init.isNone());
  EXPECT_EQ(printPlan(*plan), text);
}

TEST(InitPlanTest, RefusesBadInitialisers) {
  auto errorFor = [](const std::string &line) {
    std::string text = initPlan;
    text.replace(text.find("param b H\n"), 10, line + "\n");
    Expected<Plan> plan = cellc_test::readPlanText(text);
    return plan.ok() ? std::string("parsed") : plan.error();
  };
  EXPECT_EQ(errorFor("param b H init orthogonal"),
            "plan: param 'b': 'orthogonal' needs a matrix param "
            "[R, C], not a vector");
  EXPECT_EQ(errorFor("param b H init uniform -1"),
            "plan line 13: 'init' takes constant C, uniform A, normal S, "
            "orthogonal, fan_in or fan_out (C finite, A and S positive), got "
            "'uniform -1'");
  EXPECT_EQ(errorFor("param b H init none"),
            "plan line 13: 'init' takes constant C, uniform A, normal S, "
            "orthogonal, fan_in or fan_out (C finite, A and S positive), got "
            "'none'");
  EXPECT_EQ(errorFor("param b H I J init fan_in"),
            "plan line 13: 'param' takes NAME ROWS COLS or NAME LEN, then "
            "optionally 'init KIND [VALUE]', got 'param b H I J init "
            "fan_in'");
}

//===----------------------------------------------------------------------===//
// What is drawn
//===----------------------------------------------------------------------===//

TEST(InitParamsTest, EachSchemeDrawsItsDistribution) {
  Cell cell = loadCell();
  Params params;
  Status status = cell.initParams(params.arrays(), 1, InitScheme::none());
  ASSERT_TRUE(status.ok()) << status.message();
  expectUniform(params.values["W"], 0.05, "uniform(0.05)");
  expectUniform(params.values["F"], 1 / std::sqrt(double(I)), "fan_in");
  expectUniform(params.values["G"], 1 / std::sqrt(double(H)), "fan_out");

  Moments normal = momentsOf(params.values["N"]);
  double n = params.values["N"].size();
  EXPECT_NEAR(normal.mean, 0, 5 * 0.5 / std::sqrt(n));
  EXPECT_NEAR(std::sqrt(normal.variance), 0.5, 5 * 0.5 / std::sqrt(2 * n));
  int64_t withinOneSigma = 0;
  for (float v : params.values["N"])
    withinOneSigma += std::fabs(v) < 0.5;
  EXPECT_NEAR(withinOneSigma / n, 0.6827, 0.05);

  for (float v : params.values["bf"])
    EXPECT_EQ(v, 1.0f);
  // Tall: orthonormal columns; wide: orthonormal rows.
  expectOrthonormal(params.values["U"], 4 * H, H, true, "U [4H, H]");
  expectOrthonormal(params.values["Wide"], H, 3 * H, false, "Wide [H, 3H]");
  // Without an initialiser and with no fallback, left alone.
  for (const char *name : {"b", "V"})
    for (float v : params.values[name])
      EXPECT_EQ(v, -7.0f) << name;
}

TEST(InitParamsTest, NormalMomentsOnALargeDraw) {
  std::vector<float> values(200000);
  Status status =
      initArray(InitScheme::normal(2), "big", 3, {values.data(), {400, 500}});
  ASSERT_TRUE(status.ok()) << status.message();
  Moments m = momentsOf(values);
  EXPECT_NEAR(m.mean, 0, 5 * 2 / std::sqrt(200000.0));
  EXPECT_NEAR(std::sqrt(m.variance), 2, 0.01 * 2);
  double fourth = 0;
  for (float v : values)
    fourth += std::pow(v / 2.0, 4);
  EXPECT_NEAR(fourth / values.size(), 3, 0.1); // a normal's kurtosis
}

TEST(InitParamsTest, SquareOrthogonalIsOrthogonalBothWays) {
  std::vector<float> q(64 * 64);
  ASSERT_TRUE(
      initArray(InitScheme::orthogonal(), "Q", 5, {q.data(), {64, 64}}).ok());
  expectOrthonormal(q, 64, 64, true, "columns");
  expectOrthonormal(q, 64, 64, false, "rows");
}

TEST(InitParamsTest, FallbackDrawsParamsWithoutInitialisers) {
  Cell cell = loadCell();
  Params params;
  ASSERT_TRUE(
      cell.initParams(params.arrays(), 1, InitScheme::constant(0.25)).ok());
  for (const char *name : {"b", "V"})
    for (float v : params.values[name])
      EXPECT_EQ(v, 0.25f) << name;
  // The cell's own initialisers win over the fallback.
  for (float v : params.values["bf"])
    EXPECT_EQ(v, 1.0f);

  Params fanIn;
  ASSERT_TRUE(cell.initParams(fanIn.arrays(), 1, InitScheme::fanIn()).ok());
  expectUniform(fanIn.values["V"], 1 / std::sqrt(double(I)), "fallback V");
  expectWithin(fanIn.values["b"], 1 / std::sqrt(double(H)), "fallback b");
}

TEST(InitParamsTest, SameSeedSameValuesOtherSeedOthers) {
  Cell cell = loadCell();
  Params first, second, third;
  ASSERT_TRUE(cell.initParams(first.arrays(), 42, InitScheme::fanIn()).ok());
  ASSERT_TRUE(cell.initParams(second.arrays(), 42, InitScheme::fanIn()).ok());
  ASSERT_TRUE(cell.initParams(third.arrays(), 43, InitScheme::fanIn()).ok());
  for (const auto &[name, values] : first.values) {
    EXPECT_EQ(values, second.values[name]) << name;
    if (name != "bf")
      EXPECT_NE(values, third.values[name]) << name;
  }
}

// A param's stream is seeded from the seed and its name: drawing it alone,
// or with initArray, gives the values it gets among all the others; two
// params of the same shape and scheme differ.
TEST(InitParamsTest, AParamsValuesDependOnlyOnTheSeedAndItsName) {
  Cell cell = loadCell();
  Params all, alone;
  ASSERT_TRUE(cell.initParams(all.arrays(), 9, InitScheme::fanIn()).ok());
  ASSERT_TRUE(
      cell.initParams(alone.arrays({"U", "N"}), 9, InitScheme::fanIn()).ok());
  EXPECT_EQ(all.values["U"], alone.values["U"]);
  EXPECT_EQ(all.values["N"], alone.values["N"]);
  std::vector<float> n(H * I);
  ASSERT_TRUE(
      initArray(InitScheme::normal(0.5), "N", 9, {n.data(), {H, I}}).ok());
  EXPECT_EQ(n, all.values["N"]);
  EXPECT_NE(all.values["F"], all.values["V"]); // both fan_in [H, I]
}

// The generator is documented (docs/cell-language.md, "Initialisers"): these
// are its first values for seed 42, the same on every platform. cellc run's
// and the Python package's tests expect the same numbers.
TEST(InitParamsTest, GoldenValues) {
  std::vector<float> uniform(6), normal(6), orthogonal(6);
  ASSERT_TRUE(
      initArray(InitScheme::uniform(1), "W", 42, {uniform.data(), {2, 3}})
          .ok());
  ASSERT_TRUE(
      initArray(InitScheme::normal(1), "W", 42, {normal.data(), {2, 3}}).ok());
  ASSERT_TRUE(
      initArray(InitScheme::orthogonal(), "W", 42, {orthogonal.data(), {2, 3}})
          .ok());
  EXPECT_EQ(uniform,
            (std::vector<float>{0x1.66f378p-4, 0x1.4a9ae4p-3, -0x1.0cd56ap-4,
                                0x1.b9773cp-2, 0x1.5d690cp-2, 0x1.1b556cp-1}));
  EXPECT_EQ(normal,
            (std::vector<float>{0x1.3dfc4ap+0, 0x1.24dfdep+1, -0x1.18ccf6p-2,
                                0x1.cd1e0cp+0, 0x1.60aadp-1, 0x1.1df984p+0}));
  EXPECT_EQ(orthogonal,
            (std::vector<float>{0x1.e5dd04p-2, 0x1.bf7ec4p-1, -0x1.ad0c0ap-4,
                                0x1.4f1412p-1, -0x1.152a68p-2, 0x1.697892p-1}));
  // A tall matrix is factored as drawn, a wide one transposed.
  std::vector<float> tall(6);
  ASSERT_TRUE(
      initArray(InitScheme::orthogonal(), "W", 42, {tall.data(), {3, 2}}).ok());
  EXPECT_EQ(tall,
            (std::vector<float>{0x1.b7a4cep-1, 0x1.8d642p-3, -0x1.843b7ap-3,
                                0x1.f5d848p-1, 0x1.e7982cp-2, 0x1.4a241ep-5}));
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(InitParamsErrorTest, NamesTheParamAndChecksBeforeWriting) {
  Cell cell = loadCell();
  Params params;
  auto arrays = params.arrays();
  arrays["nope"] = {params.values["b"].data(), {H}};
  EXPECT_EQ(cell.initParams(arrays, 1, InitScheme::fanIn()).message(),
            "initParams: cell 'init' has no param 'nope'");

  arrays = params.arrays();
  arrays["U"].shape = {4 * H, H + 1};
  EXPECT_EQ(cell.initParams(arrays, 1, InitScheme::fanIn()).message(),
            "initParams: param 'U' has shape [96, 25] but is declared "
            "[4*H, H] = [96, 24]");
  arrays = params.arrays();
  arrays["bf"].shape = {H, 1};
  EXPECT_EQ(cell.initParams(arrays, 1, InitScheme::fanIn()).message(),
            "initParams: param 'bf' has shape [24, 1] but is declared [H] = "
            "[24]");
  arrays = params.arrays();
  arrays["b"].data = nullptr;
  EXPECT_EQ(cell.initParams(arrays, 1, InitScheme::fanIn()).message(),
            "initParams: param 'b' has no data");

  // The fallback must suit every param it would draw; nothing is written
  // when it does not.
  EXPECT_EQ(
      cell.initParams(params.arrays(), 1, InitScheme::orthogonal()).message(),
      "initParams: param 'b' has no initialiser of its own, and the "
      "fallback orthogonal cannot draw it: 'orthogonal' needs a matrix "
      "param [R, C], not a vector");
  EXPECT_EQ(
      cell.initParams(params.arrays(), 1, InitScheme::uniform(-1)).message(),
      "initParams: the fallback: the bound of 'uniform' must be positive, "
      "got -1");
  for (const auto &[name, values] : params.values)
    for (float v : values)
      ASSERT_EQ(v, -7.0f) << name;
}

//===----------------------------------------------------------------------===//
// The C API
//===----------------------------------------------------------------------===//

TEST(InitParamsCApiTest, SameValuesAsTheCppApi) {
  cellrt_cell *c = cellrt_cell_load(image());
  ASSERT_NE(c, nullptr) << cellrt_last_error();
  EXPECT_STREQ(cellrt_cell_param_init(c, 0), "uniform 0.05");
  EXPECT_STREQ(cellrt_cell_param_init(c, 1), "orthogonal");
  EXPECT_STREQ(cellrt_cell_param_init(c, 6), "constant 1");
  EXPECT_STREQ(cellrt_cell_param_init(c, 7), "none");
  EXPECT_EQ(cellrt_cell_param_init(c, 9), nullptr);

  Params fromC, fromCpp;
  std::vector<cellrt_param> list;
  for (auto &[name, values] : fromC.values)
    list.push_back({name.c_str(), values.data()});
  const int64_t dims[] = {H, I};
  ASSERT_EQ(
      cellrt_init_params(c, dims, list.data(), list.size(), 77, "fan_out"), 0)
      << cellrt_last_error();
  ASSERT_TRUE(
      loadCell().initParams(fromCpp.arrays(), 77, InitScheme::fanOut()).ok());
  for (const auto &[name, values] : fromC.values)
    EXPECT_EQ(values, fromCpp.values[name]) << name;

  EXPECT_NE(cellrt_init_params(c, dims, list.data(), list.size(), 77, "glorot"),
            0);
  EXPECT_STREQ(cellrt_last_error(),
               "cellrt_init_params: the fallback must be a scheme such as "
               "\"fan_in\", \"uniform(0.1)\" or \"none\", not \"glorot\"");
  // As a cell writes it, too.
  Params written;
  std::vector<cellrt_param> writtenList;
  for (auto &[name, values] : written.values)
    writtenList.push_back({name.c_str(), values.data()});
  ASSERT_EQ(cellrt_init_params(c, dims, writtenList.data(), writtenList.size(),
                               77, "fan_out()"),
            0)
      << cellrt_last_error();
  EXPECT_EQ(written.values, fromC.values);
  cellrt_param unknown = {"nope", list[0].data};
  EXPECT_NE(cellrt_init_params(c, dims, &unknown, 1, 77, "none"), 0);
  EXPECT_STREQ(cellrt_last_error(), "cell 'init' has no param 'nope'");
  EXPECT_NE(
      cellrt_init_params(c, nullptr, list.data(), list.size(), 77, "none"), 0);
  cellrt_cell_free(c);
}
