//===- RunCommandTest.cpp - `cellc run` and the .npy reader/writer --------===//
//
// Writes ATR's arrays, runs the command's function, reads what it wrote and
// compares with a hand-written float64 ATR (forward exactly, gradients by
// central differences of that loop).
//
//===----------------------------------------------------------------------===//

#include "jit/Npy.h"
#include "jit/Npz.h"
#include "tools/cellc/Subcommands.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include "gtest/gtest.h"

#include <cmath>
#include <fstream>
#include <random>

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

TEST(Npy, RoundTripsFloatAndInt) {
  std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1.0f};
  std::string bytes = npy::serialize("<f4", {2, 3}, values.data(), 4);
  EXPECT_EQ(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "(2, 3), }"),
            10u);
  EXPECT_EQ((bytes.size() - values.size() * 4) % 64, 0u);
  npy::Array array;
  ASSERT_EQ(npy::parse(bytes, "a.npy", array), "");
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(array.floats, values);

  std::vector<int64_t> longs = {3, 1, 2};
  bytes = npy::serialize("<i8", {3}, longs.data(), 8);
  EXPECT_NE(bytes.find("(3,)"), std::string::npos);
  ASSERT_EQ(npy::parse(bytes, "l.npy", array), "");
  EXPECT_EQ(array.dtype, npy::DType::Int64);
  EXPECT_EQ(array.ints, longs);
}

TEST(Npy, ReadsVersion2Headers) {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': "
                       "(2,), }";
  header.append(64 - (12 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY\x02";
  bytes += '\0';
  uint32_t length = header.size();
  bytes.append(reinterpret_cast<const char *>(&length), 4);
  bytes += header;
  int32_t data[2] = {4, 9};
  bytes.append(reinterpret_cast<const char *>(data), 8);
  npy::Array array;
  ASSERT_EQ(npy::parse(bytes, "v2.npy", array), "");
  EXPECT_EQ(array.ints, (std::vector<int64_t>{4, 9}));
}

TEST(Npy, RejectsFortranOrderAndOtherTypes) {
  float values[4] = {};
  std::string bytes = npy::serialize("<f4", {2, 2}, values, 4);
  std::string fortran = bytes;
  fortran.replace(fortran.find("False"), 5, "True ");
  npy::Array array;
  EXPECT_NE(npy::parse(fortran, "f.npy", array).find("fortran_order"),
            std::string::npos);
  std::string doubles = npy::serialize("<f8", {1}, values, 8);
  EXPECT_NE(npy::parse(doubles, "d.npy", array).find("'<f8'"),
            std::string::npos);
  EXPECT_NE(npy::parse("garbage", "g.npy", array).find("not a .npy"),
            std::string::npos);
  EXPECT_NE(npy::parse(bytes.substr(0, bytes.size() - 4), "t.npy", array)
                .find("holds 3 elements"),
            std::string::npos);
}

// Declared shapes that overflow or claim terabytes used to throw
// std::out_of_range / std::length_error, or wrap to 0 elements and load.
TEST(Npy, ImpossibleOrHugeShapesAreErrorsNamingTheFile) {
  float values[4] = {};
  std::string bytes = npy::serialize("<f4", {4}, values, 4);
  auto withShape = [&](const std::string &shape) {
    std::string lying = bytes;
    size_t at = lying.find("(4,)");
    lying.replace(at, 4, shape);
    return lying;
  };
  npy::Array array;
  for (const char *shape :
       {"(99999999999999999999, 3, 4)", "(4611686018427387904,)",
        "(4611686018427387904, 4, 4)", "(1000000, 1000000)"}) {
    std::string error;
    EXPECT_NO_THROW(error = npy::parse(withShape(shape), "big.npy", array))
        << shape;
    EXPECT_EQ(error.rfind("big.npy: ", 0), 0u) << shape << ": " << error;
    EXPECT_TRUE(array.floats.empty()) << shape;
  }
  EXPECT_NE(npy::parse(withShape("(4611686018427387904, 4, 4)"), "w.npy", array)
                .find("more than 2^63"),
            std::string::npos);
  EXPECT_NE(
      npy::parse(withShape("(99999999999999999999, 3, 4)"), "o.npy", array)
          .find("impossible extent"),
      std::string::npos);
}

// A header longer than the file, and big-endian data, are named errors.
TEST(Npy, LyingHeaderLengthAndByteOrder) {
  float values[4] = {};
  std::string bytes = npy::serialize("<f4", {4}, values, 4);
  std::string lying = bytes;
  lying[8] = '\xff';
  lying[9] = '\xff';
  npy::Array array;
  EXPECT_EQ(npy::parse(lying, "h.npy", array), "h.npy: truncated .npy header");
  std::string big = bytes;
  big.replace(big.find("<f4"), 3, ">f4");
  EXPECT_NE(npy::parse(big, "b.npy", array).find("b.npy: unsupported dtype"),
            std::string::npos);
}

std::string readBytes(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// np.load reads what writeArchive writes (python/tests/test_params.py); here
// the round trip, and damaged archives as errors naming the path.
TEST(Npz, RoundTripsAndRejectsDamagedArchives) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("npz", dir));
  std::string path = (dir + "/p.npz").str();
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, b = {-1, 0.5f};
  ASSERT_EQ(npy::writeArchive(path, {{"W", {{2, 3}, w.data()}},
                                     {"b", {{2}, b.data()}}}),
            "");
  std::map<std::string, npy::Array> arrays;
  ASSERT_EQ(npy::readArchive(path, arrays), "");
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays["W"].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(arrays["W"].floats, w);
  EXPECT_EQ(arrays["b"].floats, b);

  std::string bytes = readBytes(path);
  std::string flipped = bytes;
  flipped[bytes.find("NUMPY") + 127 + 4] ^= 1; // W's second value
  writeBytes(path, flipped);
  EXPECT_NE(npy::readArchive(path, arrays).find("entry W.npy fails its "
                                                 "CRC-32 check"),
            std::string::npos);
  // Forged central-directory fields (offsets from the APPNOTE): a local
  // header offset past the end, and sizes the data cannot have.
  size_t central = bytes.find("PK\x01\x02");
  ASSERT_NE(central, std::string::npos);
  auto forged = [&](size_t field, uint32_t value) {
    std::string copy = bytes;
    for (int i = 0; i < 4; ++i)
      copy[central + field + i] = static_cast<char>(value >> (8 * i));
    writeBytes(path, copy);
    return npy::readArchive(path, arrays);
  };
  EXPECT_NE(forged(42, 0xfffffff0u).find("damaged local header"),
            std::string::npos);
  EXPECT_NE(forged(24, 0x7fffffffu).find("cannot have"), std::string::npos);
  // 0xffffffff without a zip64 extra field to hold the real value.
  EXPECT_NE(forged(42, 0xffffffffu).find("damaged ZIP directory"),
            std::string::npos);
  // Every truncation is an error that names the file, never a crash.
  for (size_t length = 0; length < bytes.size(); length += 7) {
    writeBytes(path, bytes.substr(0, length));
    EXPECT_EQ(npy::readArchive(path, arrays).rfind(path + ": ", 0), 0u)
        << length;
  }
  writeBytes(path, std::string(100, 'x'));
  EXPECT_NE(npy::readArchive(path, arrays).find("not a .npz archive"),
            std::string::npos);
  EXPECT_NE(npy::readArchive(path + ".missing", arrays).find("cannot open"),
            std::string::npos);
  llvm::sys::fs::remove_directories(dir);
}

} // namespace
