//===- NpyTest.cpp - The .npy and .npz readers on hostile input -----------===//
//
// What numpy writes must load; anything else must end, promptly and without
// reading more than the file declares, in an error naming the file: headers
// that are not numpy's dict, shapes that cannot be, data of the wrong
// length, and files that are not regular files (a symlink to /dev/zero, a
// FIFO).
//
//===----------------------------------------------------------------------===//

#include "jit/Npy.h"
#include "jit/Npz.h"
#include "test/unit/BoundedChild.h"

#include "gtest/gtest.h"

#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <map>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace cellc;

namespace {

/// A fresh folder, removed with everything in it.
struct TemporaryDir {
  std::string path;
  TemporaryDir() {
    char pattern[] = "/tmp/cellc-npy-test-XXXXXX";
    EXPECT_NE(mkdtemp(pattern), nullptr);
    path = pattern;
  }
  ~TemporaryDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string file(const std::string &name) const { return path + "/" + name; }
};

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// `read()` in a child process with 20 s and 2 GiB: on a reader that never
/// stops, nullopt instead of a hung test.
std::optional<std::string>
readBounded(const std::function<std::string()> &read) {
  return test::runBounded(read, 20, 2ul << 30);
}

/// A version 1.0 .npy file with `header` as its dict and `data` after it.
std::string withHeader(const std::string &header, const std::string &data) {
  std::string padded = header;
  padded.append((64 - (10 + padded.size() + 1) % 64) % 64, ' ');
  padded += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(padded.size() & 0xff);
  bytes += static_cast<char>(padded.size() >> 8);
  return bytes + padded + data;
}

const std::string kFourFloats(16, '\0');

std::string parseError(const std::string &header,
                       const std::string &data = kFourFloats) {
  npy::Array array;
  return npy::parse(withHeader(header, data), "x.npy", array);
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

// np.load reads what writeArchive writes (python/tests/test_params.py); here
// the round trip, and damaged archives as errors naming the path.
TEST(Npz, RoundTripsAndRejectsDamagedArchives) {
  TemporaryDir dir;
  std::string path = dir.file("p.npz");
  std::vector<float> w = {1, 2, 3, 4, 5, 6}, b = {-1, 0.5f};
  ASSERT_EQ(npy::writeArchive(
                path, {{"W", {{2, 3}, w.data()}}, {"b", {{2}, b.data()}}}),
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
  EXPECT_NE(npy::readArchive(path, arrays)
                .find("entry W.npy fails its "
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
}

// numpy's own headers in the forms numpy has written them: key order,
// double quotes, Python 2's `4L`, no trailing comma, extra padding.
TEST(Npy, ReadsEveryFormNumpyWrites) {
  for (const char *header :
       {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
        "{'shape': (4,), 'fortran_order': False, 'descr': '<f4'}",
        "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (4, )}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (4L,), }",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)}",
        "{'descr':'<f4','fortran_order':False,'shape':(1,4,)}      "}) {
    npy::Array array;
    EXPECT_EQ(npy::parse(withHeader(header, kFourFloats), "x.npy", array), "")
        << header;
    EXPECT_EQ(array.floats.size(), 4u) << header;
  }
  npy::Array scalar;
  EXPECT_EQ(npy::parse(withHeader("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (), }",
                                  std::string(4, '\0')),
                       "s.npy", scalar),
            "");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(scalar.floats.size(), 1u);
}

// The old reader found each key by searching the text: it took the first
// of two `shape`s and ignored keys numpy never writes.
TEST(Npy, UnknownAndDuplicateKeysAreNamed) {
  std::string error = parseError("{'descr': '<f4', 'fortran_order': False, "
                                 "'shape': (4,), 'strides': (4,), }");
  EXPECT_EQ(error.rfind("x.npy: ", 0), 0u) << error;
  EXPECT_NE(error.find("unknown key 'strides'"), std::string::npos) << error;

  error = parseError("{'descr': '<f4', 'fortran_order': False, "
                     "'shape': (4,), 'shape': (2,), }");
  EXPECT_EQ(error.rfind("x.npy: ", 0), 0u) << error;
  EXPECT_NE(error.find("'shape' twice"), std::string::npos) << error;

  error = parseError("{'descr': '<f4', 'descr': '<f4', "
                     "'fortran_order': False, 'shape': (4,)}");
  EXPECT_NE(error.find("'descr' twice"), std::string::npos) << error;

  error = parseError("{'descr': '<f4', 'shape': (4,), }");
  EXPECT_NE(error.find("no 'fortran_order'"), std::string::npos) << error;
  error = parseError("{'descr': '<f4', 'fortran_order': False}");
  EXPECT_NE(error.find("no 'shape'"), std::string::npos) << error;
}

// Text that is not a Python dict literal, or has junk after it.
TEST(Npy, MalformedHeadersAreErrors) {
  for (const char *header : {
           "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), ",
           "{{'descr': '<f4', 'fortran_order': False, 'shape': (4,)}}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)}}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)} junk",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)}\n\n",
           "junk {'descr': '<f4', 'fortran_order': False, 'shape': (4,)}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (4,}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': 4,}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (4)}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (4,,)}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (2 2)}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (,)}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (0x4,)}",
           "{'descr': '<f4' 'fortran_order': False, 'shape': (4,)}",
           "{'descr' '<f4', 'fortran_order': False, 'shape': (4,)}",
           "{'descr': '<f4, 'fortran_order': False, 'shape': (4,)}",
           "{'descr': <f4, 'fortran_order': False, 'shape': (4,)}",
           "{'descr': '<f4', 'fortran_order': Falsey, 'shape': (4,)}",
           "{'descr': '<f4', 'fortran_order': 0, 'shape': (4,)}",
           "{descr: '<f4', 'fortran_order': False, 'shape': (4,)}",
           "",
       }) {
    std::string error = parseError(header);
    EXPECT_EQ(error.rfind("x.npy: ", 0), 0u) << header << " -> " << error;
  }
}

TEST(Npy, NegativeOrOverflowingExtentsAreErrors) {
  auto withShape = [](const std::string &shape) {
    return parseError(
        "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + "}");
  };
  std::string error = withShape("(-4,)");
  EXPECT_EQ(error.rfind("x.npy: ", 0), 0u) << error;
  EXPECT_NE(error.find("negative extent -4"), std::string::npos) << error;
  error = withShape("(2, -2)");
  EXPECT_NE(error.find("negative extent -2"), std::string::npos) << error;
  error = withShape("(9223372036854775808,)");
  EXPECT_NE(error.find("impossible extent 9223372036854775808"),
            std::string::npos)
      << error;
  // Each extent fits, their product does not; nor do its bytes.
  for (const char *shape :
       {"(4294967296, 4294967296)", "(3037000500, 3037000500)",
        "(2305843009213693952,)"}) {
    error = withShape(shape);
    EXPECT_EQ(error.rfind("x.npy: ", 0), 0u) << shape << ": " << error;
    EXPECT_NE(error.find("more than 2^63"), std::string::npos)
        << shape << ": " << error;
  }
  // A zero extent is an empty array, as numpy has it.
  npy::Array empty;
  EXPECT_EQ(npy::parse(withHeader("{'descr': '<f4', 'fortran_order': False, "
                                  "'shape': (0, 4)}",
                                  ""),
                       "e.npy", empty),
            "");
  EXPECT_TRUE(empty.floats.empty());
}

TEST(Npy, DataLongerOrShorterThanTheShapeIsAnError) {
  const std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (4,)}";
  std::string error = parseError(header, kFourFloats + "tail");
  EXPECT_EQ(error.rfind("x.npy: ", 0), 0u) << error;
  EXPECT_NE(error.find("4 bytes after"), std::string::npos) << error;
  error = parseError(header, kFourFloats.substr(0, 14));
  EXPECT_NE(error.find("x.npy: holds 3 elements but its shape [4] needs 4"),
            std::string::npos)
      << error;
}

TEST(Npy, HugeHeaderLengthIsBounded) {
  std::string bytes = "\x93NUMPY\x02";
  bytes += '\0';
  bytes += std::string("\xff\xff\xff\x7f", 4);
  npy::Array array;
  std::string error = npy::parse(bytes + std::string(100, ' '), "v.npy", array);
  EXPECT_EQ(error.rfind("v.npy: ", 0), 0u) << error;
}

// `x_x.npy -> /dev/zero` used to read gigabytes and never end.
TEST(Npy, SymlinkToDevZeroEndsWithAnErrorNamingTheFile) {
  TemporaryDir dir;
  std::string path = dir.file("x_x.npy");
  ASSERT_EQ(symlink("/dev/zero", path.c_str()), 0);
  std::optional<std::string> error = readBounded([&] {
    npy::Array array;
    return npy::readFile(path, array);
  });
  ASSERT_TRUE(error) << "the reader did not end within 20 s and 2 GiB";
  EXPECT_EQ(error->rfind(path + ": ", 0), 0u) << *error;
}

TEST(Npz, SymlinkToDevZeroEndsWithAnErrorNamingTheFile) {
  TemporaryDir dir;
  std::string path = dir.file("params.npz");
  ASSERT_EQ(symlink("/dev/zero", path.c_str()), 0);
  std::optional<std::string> error = readBounded([&] {
    std::map<std::string, npy::Array> arrays;
    return npy::readArchive(path, arrays);
  });
  ASSERT_TRUE(error) << "the reader did not end within 20 s and 2 GiB";
  EXPECT_EQ(error->rfind(path + ": ", 0), 0u) << *error;
  EXPECT_NE(error->find("not a regular file"), std::string::npos) << *error;
}

TEST(Npy, RegularFileLongerThanItsShapeIsAnError) {
  TemporaryDir dir;
  std::string path = dir.file("a.npy");
  float values[4] = {1, 2, 3, 4};
  std::string bytes = npy::serialize("<f4", {4}, values, 4);
  writeBytes(path, bytes + std::string(1000, '\0'));
  npy::Array array;
  std::string error = npy::readFile(path, array);
  EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << error;
  EXPECT_NE(error.find("1000 bytes after"), std::string::npos) << error;
  writeBytes(path, bytes);
  EXPECT_EQ(npy::readFile(path, array), "");
  EXPECT_EQ(array.floats, std::vector<float>(values, values + 4));
}

/// Writes `bytes` into the FIFO at `path` from a thread, then closes it.
std::thread feedFifo(const std::string &path, const std::string &bytes) {
  return std::thread([path, bytes] {
    // Without a reader a blocking open would wait forever: retry for 20 s.
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 2000; ++tries) {
      fd = open(path.c_str(), O_WRONLY | O_NONBLOCK);
      if (fd < 0)
        usleep(10000);
    }
    if (fd < 0)
      return;
    fcntl(fd, F_SETFL, 0);
    for (size_t at = 0; at < bytes.size();) {
      ssize_t wrote = write(fd, bytes.data() + at, bytes.size() - at);
      if (wrote <= 0)
        break;
      at += size_t(wrote);
    }
    close(fd);
  });
}

// A FIFO is read as far as its header declares, and no further: what it
// holds beyond that, or lacks, is an error naming it.
TEST(Npy, FifoIsReadUpToWhatItsHeaderDeclares) {
  signal(SIGPIPE, SIG_IGN); // the reader may close before the writer ends
  TemporaryDir dir;
  std::string path = dir.file("x.npy");
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  float values[4] = {1, 2, 3, 4};
  std::string bytes = npy::serialize("<f4", {4}, values, 4);
  auto readFifo = [&](const std::string &fed) {
    std::thread writer = feedFifo(path, fed);
    std::optional<std::string> error = readBounded([&] {
      npy::Array array;
      std::string e = npy::readFile(path, array);
      if (e.empty() && array.floats != std::vector<float>(values, values + 4))
        e = "wrong values";
      return e;
    });
    writer.join();
    return error;
  };
  std::optional<std::string> error = readFifo(bytes);
  ASSERT_TRUE(error);
  EXPECT_EQ(*error, "");
  error = readFifo(bytes.substr(0, bytes.size() - 2));
  ASSERT_TRUE(error);
  EXPECT_EQ(error->rfind(path + ": holds 3 elements", 0), 0u) << *error;
  // The writer may block on a full pipe once the reader stops: a short tail
  // that fits the pipe keeps this test from waiting on it.
  error = readFifo(bytes + "more");
  ASSERT_TRUE(error);
  EXPECT_EQ(error->rfind(path + ": ", 0), 0u) << *error;
  EXPECT_NE(error->find("more bytes than"), std::string::npos) << *error;
}

} // namespace
