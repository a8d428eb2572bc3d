//===- RunCommandTest.cpp - `cellc run` and the .npy reader/writer --------===//
//
// Writes ATR's arrays, runs the command's function, reads what it wrote and
// compares with a hand-written float64 ATR (forward exactly, gradients by
// central differences of that loop).
//
//===----------------------------------------------------------------------===//

#include "cellrt/Runtime.h"
#include "jit/Npy.h"
#include "jit/Npz.h"
#include "test/unit/BoundedChild.h"
#include "tools/cellc/Subcommands.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cmath>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace cellc;

namespace {

const char *const kAtrPath = CELLC_SOURCE_DIR "/cells/atr.cell";

constexpr int64_t T = 5, B = 3, I = 4, H = 6;

/// ATR's arrays in float64, as the reference sees them.
struct AtrArrays {
  std::vector<double> x, wx, wh, h0, dout, dfinal;
  std::vector<int32_t> lengths = {5, 2, 4};
};

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }

/// The ATR recurrence per sequence, written from the paper; fills out
/// [T, B, H] and final [B, H] and returns sum(out*dout)+sum(final*dfinal).
double atrReference(const AtrArrays &a, bool reverse, std::vector<double> &out,
                    std::vector<double> &final) {
  out.assign(T * B * H, 0.0);
  final.assign(B * H, 0.0);
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> h(a.h0.begin() + b * H, a.h0.begin() + (b + 1) * H);
    for (int64_t i = 0; i < a.lengths[b]; ++i) {
      int64_t t = reverse ? a.lengths[b] - 1 - i : i;
      std::vector<double> next(H);
      for (int64_t r = 0; r < H; ++r) {
        double p = 0, q = 0;
        for (int64_t c = 0; c < I; ++c)
          p += a.wx[r * I + c] * a.x[(t * B + b) * I + c];
        for (int64_t c = 0; c < H; ++c)
          q += a.wh[r * H + c] * h[c];
        next[r] = sigmoid(p + q) * p + sigmoid(p - q) * h[r];
      }
      h = next;
      for (int64_t r = 0; r < H; ++r)
        out[(t * B + b) * H + r] = h[r];
    }
    for (int64_t r = 0; r < H; ++r)
      final[b * H + r] = h[r];
  }
  double loss = 0;
  for (size_t k = 0; k < out.size(); ++k)
    loss += out[k] * a.dout[k];
  for (size_t k = 0; k < final.size(); ++k)
    loss += final[k] * a.dfinal[k];
  return loss;
}

struct TemporaryDir {
  llvm::SmallString<128> path;
  TemporaryDir() {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("cellc-run-test", path));
  }
  ~TemporaryDir() { llvm::sys::fs::remove_directories(path); }
  std::string file(const std::string &name) const {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, name);
    return std::string(p);
  }
};

std::vector<double> randomValues(std::mt19937 &rng, int64_t n) {
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  std::vector<double> v(n);
  for (double &x : v)
    x = uniform(rng); // float32-representable, so both sides see the same
  return v;
}

void write(const TemporaryDir &dir, const std::string &name,
           const std::vector<int64_t> &shape, const std::vector<double> &v) {
  std::vector<float> f(v.begin(), v.end());
  ASSERT_EQ(npy::writeFile(dir.file(name), shape, f.data()), "");
}

std::vector<double> read(const TemporaryDir &dir, const std::string &name,
                         const std::vector<int64_t> &shape) {
  npy::Array array;
  std::string error = npy::readFile(dir.file(name), array);
  EXPECT_EQ(error, "");
  EXPECT_EQ(array.shape, shape) << name;
  return std::vector<double>(array.floats.begin(), array.floats.end());
}

/// max|a-b| / max|b|.
double relativeError(const std::vector<double> &a,
                     const std::vector<double> &b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(a.at(i) - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / (scale > 0 ? scale : 1);
}

class RunCommand : public ::testing::Test {
protected:
  void SetUp() override {
    std::mt19937 rng(3);
    arrays.x = randomValues(rng, T * B * I);
    arrays.wx = randomValues(rng, H * I);
    arrays.wh = randomValues(rng, H * H);
    arrays.h0 = randomValues(rng, B * H);
    arrays.dout = randomValues(rng, T * B * H);
    arrays.dfinal = randomValues(rng, B * H);
    write(dir, "x_x.npy", {T, B, I}, arrays.x);
    write(dir, "param_Wx.npy", {H, I}, arrays.wx);
    write(dir, "param_Wh.npy", {H, H}, arrays.wh);
    write(dir, "init_h.npy", {B, H}, arrays.h0);
    ASSERT_EQ(
        npy::writeFile(dir.file("lengths.npy"), {B}, arrays.lengths.data()),
        "");
    options.cellFile = kAtrPath;
    options.dir = std::string(dir.path);
    options.cacheDir = cache.file("cache");
  }

  std::string run() {
    std::string log;
    llvm::raw_string_ostream stream(log);
    return runOnDirectory(options, stream);
  }

  TemporaryDir dir, cache;
  AtrArrays arrays;
  RunOptions options;
};

TEST_F(RunCommand, ForwardMatchesTheFloat64Reference) {
  for (bool reverse : {false, true}) {
    options.reverse = reverse;
    ASSERT_EQ(run(), "");
    std::vector<double> out, final;
    arrays.dout.assign(T * B * H, 0.0);
    arrays.dfinal.assign(B * H, 0.0);
    atrReference(arrays, reverse, out, final);
    EXPECT_LE(relativeError(read(dir, "out.npy", {T, B, H}), out), 1e-4);
    EXPECT_LE(relativeError(read(dir, "final_h.npy", {B, H}), final), 1e-4);
    // Inference only: no gradients without dout or dfinal.
    EXPECT_FALSE(llvm::sys::fs::exists(dir.file("grad_param_Wx.npy")));
  }
}

TEST_F(RunCommand, GradientsMatchFiniteDifferencesOfTheReference) {
  write(dir, "dout.npy", {T, B, H}, arrays.dout);
  write(dir, "dfinal_h.npy", {B, H}, arrays.dfinal);
  for (bool reverse : {false, true}) {
    options.reverse = reverse;
    ASSERT_EQ(run(), "");
    std::vector<double> out, final;
    atrReference(arrays, reverse, out, final);
    EXPECT_LE(relativeError(read(dir, "out.npy", {T, B, H}), out), 1e-4);

    struct Checked {
      const char *file;
      std::vector<double> AtrArrays::*array;
      std::vector<int64_t> shape;
    };
    for (const Checked &checked :
         {Checked{"grad_x_x.npy", &AtrArrays::x, {T, B, I}},
          Checked{"grad_param_Wx.npy", &AtrArrays::wx, {H, I}},
          Checked{"grad_param_Wh.npy", &AtrArrays::wh, {H, H}},
          Checked{"grad_init_h.npy", &AtrArrays::h0, {B, H}}}) {
      std::vector<double> grad = read(dir, checked.file, checked.shape);
      // Central differences at every coordinate (the arrays are small).
      std::vector<double> numeric(grad.size());
      for (size_t k = 0; k < grad.size(); ++k) {
        AtrArrays perturbed = arrays;
        std::vector<double> &values = perturbed.*checked.array;
        std::vector<double> o, f;
        values[k] += 1e-6;
        double plus = atrReference(perturbed, reverse, o, f);
        values[k] -= 2e-6;
        double minus = atrReference(perturbed, reverse, o, f);
        numeric[k] = (plus - minus) / 2e-6;
      }
      EXPECT_LE(relativeError(grad, numeric), 1e-4)
          << checked.file << (reverse ? " (reverse)" : "");
    }
  }
}

TEST_F(RunCommand, MissingArrayIsNamed) {
  llvm::sys::fs::remove(dir.file("param_Wh.npy"));
  std::string error = run();
  EXPECT_NE(error.find("missing array param_Wh.npy"), std::string::npos)
      << error;
}

TEST_F(RunCommand, WrongShapeNamesTheFileAndBothShapes) {
  write(dir, "param_Wh.npy", {H, H + 1}, std::vector<double>(H * (H + 1)));
  std::string error = run();
  EXPECT_NE(error.find("param_Wh.npy: shape [6, 7] does not match param Wh "
                       "[H, H] = [6, 6]"),
            std::string::npos)
      << error;
}

TEST_F(RunCommand, WrongInitialStateShape) {
  write(dir, "init_h.npy", {B + 1, H}, std::vector<double>((B + 1) * H));
  std::string error = run();
  EXPECT_NE(error.find("init_h.npy: shape [4, 6] does not match initial "
                       "state h [B, H] = [3, 6]"),
            std::string::npos)
      << error;
}

TEST_F(RunCommand, LengthsOutOfRange) {
  std::vector<int32_t> lengths = {5, 0, 4};
  ASSERT_EQ(npy::writeFile(dir.file("lengths.npy"), {B}, lengths.data()), "");
  std::string error = run();
  EXPECT_NE(error.find("lengths[1] = 0"), std::string::npos) << error;
  for (int32_t bad : {-2, 1000000}) {
    lengths[1] = bad;
    ASSERT_EQ(npy::writeFile(dir.file("lengths.npy"), {B}, lengths.data()), "");
    error = run();
    EXPECT_NE(error.find("lengths[1] = " + std::to_string(bad)),
              std::string::npos)
        << error;
  }
}

// A truncated array file is an error naming it, not a crash.
TEST_F(RunCommand, TruncatedArrayIsNamed) {
  std::vector<int32_t> lengths = {5, 2, 4};
  std::string path = dir.file("lengths.npy");
  ASSERT_EQ(npy::writeFile(path, {B}, lengths.data()), "");
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t keep : {bytes.size() - 3, size_t(40), size_t(7), size_t(0)}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        << bytes.substr(0, keep);
    std::string error = run();
    EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << keep << ": " << error;
  }
}

// `x_x.npy -> /dev/zero` used to read gigabytes and never end; a params
// archive that is a device likewise. Each is now an error naming the file,
// at once. The run is bounded (a child process with 60 s and 4 GiB) so that
// a reader that never stops fails here instead of hanging the suite.
TEST_F(RunCommand, DeviceFilesEndInAnErrorNamingThem) {
  ASSERT_EQ(run(), ""); // compile (and cache) the cell outside the child
  std::string input = dir.file("x_x.npy");
  llvm::sys::fs::remove(input);
  ASSERT_EQ(symlink("/dev/zero", input.c_str()), 0);
  std::optional<std::string> error =
      test::runBounded([&] { return run(); }, 60, 4ul << 30);
  ASSERT_TRUE(error) << "cellc run did not end within 60 s and 4 GiB";
  EXPECT_EQ(error->rfind(input + ": ", 0), 0u) << *error;

  write(dir, "x_x.npy", {T, B, I}, arrays.x); // renamed over the symlink
  options.paramsFile = "/dev/zero";
  llvm::sys::fs::remove(dir.file("param_Wx.npy"));
  llvm::sys::fs::remove(dir.file("param_Wh.npy"));
  error = test::runBounded([&] { return run(); }, 60, 4ul << 30);
  ASSERT_TRUE(error) << "cellc run did not end within 60 s and 4 GiB";
  EXPECT_EQ(error->rfind("/dev/zero: not a regular file", 0), 0u) << *error;
}

TEST_F(RunCommand, MisspeltArrayIsAnError) {
  write(dir, "init_hh.npy", {B, H}, arrays.h0);
  std::string error = run();
  EXPECT_NE(error.find("init_hh.npy"), std::string::npos) << error;
}

TEST_F(RunCommand, BadCellGivesLocatedDiagnostics) {
  options.cellFile = CELLC_SOURCE_DIR "/test/frontend/error-unknown-name.cell";
  std::string error = run();
  EXPECT_NE(error.find("error-unknown-name.cell:"), std::string::npos) << error;
  EXPECT_NE(error.find(": error: "), std::string::npos) << error;
}

//===----------------------------------------------------------------------===//
// --init-seed: params the directory does not give are drawn
//===----------------------------------------------------------------------===//

std::vector<float> drawnParam(const TemporaryDir &dir, const std::string &name,
                              const std::vector<int64_t> &shape) {
  std::map<std::string, npy::Array> drawn;
  EXPECT_EQ(npy::readArchive(dir.file("drawn_params.npz"), drawn), "");
  EXPECT_EQ(drawn[name].shape, shape) << name;
  return drawn[name].floats;
}

TEST_F(RunCommand, InitSeedDrawsTheMissingParamsAndRunsWithThem) {
  llvm::sys::fs::remove(dir.file("param_Wh.npy"));
  EXPECT_NE(run().find("missing array param_Wh.npy"), std::string::npos);
  options.initSeed = 42;
  ASSERT_EQ(run(), "");
  // atr.cell declares no initialisers: the fallback (fan_in) draws Wh, as
  // Cell::initParams and initArray do for the same seed and name.
  std::vector<float> wh = drawnParam(dir, "Wh", {H, H});
  std::vector<float> expected(H * H);
  ASSERT_TRUE(cellrt::initArray(cellrt::InitScheme::fanIn(), "Wh", 42,
                                {expected.data(), {H, H}})
                  .ok());
  EXPECT_EQ(wh, expected);
  std::map<std::string, npy::Array> drawn;
  ASSERT_EQ(npy::readArchive(dir.file("drawn_params.npz"), drawn), "");
  EXPECT_EQ(drawn.count("Wx"), 0u) << "Wx was given";

  // The forward pass ran with them.
  arrays.wh.assign(wh.begin(), wh.end());
  std::vector<double> out, final;
  atrReference(arrays, false, out, final);
  EXPECT_LT(relativeError(read(dir, "out.npy", {T, B, H}), out), 1e-5);

  options.initSeed = 43;
  ASSERT_EQ(run(), "");
  EXPECT_NE(drawnParam(dir, "Wh", {H, H}), wh);
  options.initSeed = 42;
  options.initFallback = cellrt::InitScheme::uniform(0.01);
  ASSERT_EQ(run(), "");
  for (float v : drawnParam(dir, "Wh", {H, H}))
    EXPECT_LE(std::fabs(v), 0.01f);
}

// The cell's own initialiser, and the golden values InitParamsTest pins for
// the C++ and C APIs.
TEST_F(RunCommand, InitSeedUsesTheCellsInitialisers) {
  std::ofstream(dir.file("golden.cell"))
      << "cell golden(x: [I]) {\n  state h: [H]\n"
         "  param W: [H, I] ~ uniform(1)\n  h' = tanh(W @ x + h)\n}\n";
  for (const char *file : {"x_x.npy", "param_Wx.npy", "param_Wh.npy"})
    llvm::sys::fs::remove(dir.file(file));
  write(dir, "x_x.npy", {T, B, 3}, std::vector<double>(T * B * 3, 0.5));
  write(dir, "init_h.npy", {B, 2}, std::vector<double>(B * 2, 0.0));
  options.cellFile = dir.file("golden.cell");
  options.initSeed = 42;
  ASSERT_EQ(run(), "");
  EXPECT_EQ(drawnParam(dir, "W", {2, 3}),
            (std::vector<float>{0x1.66f378p-4, 0x1.4a9ae4p-3, -0x1.0cd56ap-4,
                                0x1.b9773cp-2, 0x1.5d690cp-2, 0x1.1b556cp-1}));
}

// An LSTM that declares its forget bias 1 (test/models/Inputs/lstm-forget-
// bias-1.cell) starts it so through cellc run, and its other biases from
// the fallback.
TEST_F(RunCommand, InitSeedGivesDeclaredForgetBiasOne) {
  for (const char *file : {"param_Wx.npy", "param_Wh.npy"})
    llvm::sys::fs::remove(dir.file(file));
  write(dir, "init_c.npy", {B, H}, std::vector<double>(B * H, 0.0));
  options.cellFile =
      CELLC_SOURCE_DIR "/test/models/Inputs/lstm-forget-bias-1.cell";
  options.initSeed = 7;
  ASSERT_EQ(run(), "");
  EXPECT_EQ(drawnParam(dir, "bf", {H}), std::vector<float>(H, 1.f));
  std::vector<float> bi = drawnParam(dir, "bi", {H});
  for (float v : bi)
    EXPECT_LE(std::fabs(v), 1 / std::sqrt(float(H))); // fan_in of a [H]
  EXPECT_NE(bi, std::vector<float>(H, 1.f));
}

TEST_F(RunCommand, DrawnParamsGiveNoSizes) {
  for (const char *file : {"param_Wx.npy", "param_Wh.npy", "init_h.npy"})
    llvm::sys::fs::remove(dir.file(file));
  options.initSeed = 1;
  std::string error = run();
  EXPECT_EQ(error.rfind("cannot tell the size of dimension H from the "
                        "arrays in ",
                        0),
            0u)
      << error;
  EXPECT_NE(error.find("(drawn params give no sizes: pass --dim H=N, or an "
                       "array that has it)"),
            std::string::npos)
      << error;
}

TEST(RunArguments, InitSeedAndFallback) {
  const char *argv[] = {"run",
                        "atr.cell",
                        "--dir",
                        "d",
                        "--init-seed",
                        "7",
                        "--init-fallback=uniform(0.1)"};
  RunOptions options;
  ASSERT_EQ(parseRunArguments(7, const_cast<char **>(argv), options), "");
  EXPECT_EQ(options.initSeed, 7u);
  EXPECT_EQ(options.initFallback, cellrt::InitScheme::uniform(0.1));
  auto errorFor = [](std::vector<const char *> args) {
    RunOptions options;
    return parseRunArguments(args.size(), const_cast<char **>(args.data()),
                             options);
  };
  EXPECT_EQ(errorFor({"run", "a.cell", "--dir", "d", "--init-seed", "-1"}),
            "--init-seed expects an integer from 0 to 2^64-1, got '-1'");
  EXPECT_EQ(errorFor({"run", "a.cell", "--dir", "d", "--init-seed", "1",
                      "--init-fallback", "glorot"}),
            "--init-fallback expects fan_in, fan_out, orthogonal, "
            "uniform(A), normal(S), constant(C) or none, got 'glorot'");
  EXPECT_EQ(
      errorFor({"run", "a.cell", "--dir", "d", "--init-fallback", "fan_out"}),
      "--init-fallback needs --init-seed N");
}

TEST(RunArguments, Parse) {
  const char *argv[] = {"run",       "atr.cell", "--cell",    "atr",
                        "--dim=H=4", "--dir",    "/tmp/data", "--reverse"};
  RunOptions options;
  ASSERT_EQ(parseRunArguments(8, const_cast<char **>(argv), options), "");
  EXPECT_EQ(options.cellFile, "atr.cell");
  EXPECT_EQ(options.cellName, "atr");
  EXPECT_EQ(options.fixedDims.at("H"), 4);
  EXPECT_EQ(options.dir, "/tmp/data");
  EXPECT_TRUE(options.reverse);

  const char *noDir[] = {"run", "atr.cell"};
  RunOptions other;
  EXPECT_NE(parseRunArguments(2, const_cast<char **>(noDir), other), "");
}

} // namespace
