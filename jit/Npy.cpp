//===- Npy.cpp - Read and write NumPy .npy arrays -------------------------===//

#include "jit/Npy.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace cellc::npy;

int64_t Array::numElements() const {
  // parse() has checked that the product fits in int64.
  int64_t count = 1;
  for (int64_t extent : shape)
    count *= extent;
  return count;
}

std::string cellc::npy::shapeString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

namespace {

const char kMagic[] = "\x93NUMPY";
const size_t kMagicSize = 6;
/// The magic and the format version: what says how long the header is.
const size_t kVersionEnd = kMagicSize + 2;
/// np.load refuses headers over 10,000 bytes unless told to trust the file,
/// and the arrays read here have headers under 200: a longer one is damage
/// or a lie, and a stream is never read that far on its word.
const uint64_t kMaxHeaderLength = 1 << 20;
/// What a stream is read in at a time: the buffer grows with what arrives,
/// never by what a header claims.
const size_t kStreamChunk = 1 << 16;

/// What a .npy header declares, and where the data starts.
struct Header {
  DType dtype = DType::Float32;
  size_t elementSize = 4;
  std::vector<int64_t> shape;
  size_t dataStart = 0;
  /// The shape's element count times elementSize (checked to fit in int64).
  uint64_t dataBytes = 0;
};

/// At most 40 characters of `text`, bytes outside printable ASCII as \xNN:
/// header text comes from the file and goes into a message.
std::string shown(const std::string &text) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < 40; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
    out += escaped;
  }
  return text.size() > 40 ? out + "..." : out;
}

/// The header's dict as the Python literal numpy writes,
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`: exactly
/// these three keys, once each, in any order, then spaces and a newline.
/// numpy reads it with ast.literal_eval and rejects any other key; anything
/// this does not read is an error, never a guess.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text(text) {}

  /// "" or what is wrong, phrased to follow "FILE: ".
  std::string parse(std::string &descr, bool &fortranOrder,
                    std::vector<int64_t> &shape) {
    skipBlanks();
    if (!consume('{'))
      return malformed("'{'");
    std::set<std::string> seen;
    while (true) {
      skipBlanks();
      if (consume('}'))
        break;
      std::string key;
      if (!quoted(key))
        return malformed("a quoted key or '}'");
      if (!seen.insert(key).second)
        return ".npy header has the key '" + shown(key) + "' twice";
      skipBlanks();
      if (!consume(':'))
        return malformed("':' after '" + shown(key) + "'");
      skipBlanks();
      std::string error = parseValue(key, descr, fortranOrder, shape);
      if (!error.empty())
        return error;
      skipBlanks();
      if (consume(','))
        continue;
      if (consume('}'))
        break;
      return malformed("',' or '}' after the value of '" + key + "'");
    }
    // numpy pads the header with spaces and ends it with a newline.
    size_t rest = text.find_first_not_of(' ', at);
    if (rest != std::string::npos &&
        !(rest + 1 == text.size() && text[rest] == '\n'))
      return malformed("only spaces and a final newline after '}'");
    for (const char *key : {"descr", "fortran_order", "shape"})
      if (!seen.count(key))
        return std::string(".npy header has no '") + key + "'";
    return "";
  }

private:
  std::string parseValue(const std::string &key, std::string &descr,
                         bool &fortranOrder, std::vector<int64_t> &shape) {
    if (key == "descr") {
      if (!quoted(descr))
        return "unsupported dtype (a descr that is not a string; expected "
               "'<f4', or '<i4'/'<i8' for lengths)";
      return "";
    }
    if (key == "fortran_order")
      return parseBool(fortranOrder);
    if (key == "shape")
      return parseShape(shape);
    return ".npy header has an unknown key '" + shown(key) +
           "' (numpy writes only 'descr', 'fortran_order' and 'shape')";
  }

  void skipBlanks() {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
      ++at;
  }

  bool consume(char c) {
    if (at >= text.size() || text[at] != c)
      return false;
    ++at;
    return true;
  }

  bool startsWord(const char *word) {
    size_t length = std::strlen(word);
    if (text.compare(at, length, word) != 0)
      return false;
    size_t end = at + length;
    if (end < text.size() &&
        (std::isalnum(static_cast<unsigned char>(text[end])) ||
         text[end] == '_'))
      return false;
    at = end;
    return true;
  }

  std::string malformed(const std::string &expected) const {
    return ".npy header is not numpy's dict: expected " + expected +
           " at byte " + std::to_string(at) + " of the header";
  }

  /// A '...' or "..." string (numpy's keys and descr need no escapes).
  bool quoted(std::string &value) {
    if (at >= text.size() || (text[at] != '\'' && text[at] != '"'))
      return false;
    size_t close = text.find(text[at], at + 1);
    if (close == std::string::npos)
      return false;
    value = text.substr(at + 1, close - at - 1);
    at = close + 1;
    return true;
  }

  std::string parseBool(bool &value) {
    if (startsWord("True"))
      value = true;
    else if (startsWord("False"))
      value = false;
    else
      return malformed("True or False for 'fortran_order'");
    return "";
  }

  /// `(2, 3)`, `(3,)` (a one-tuple needs its comma), `()`; Python 2's
  /// numpy wrote `3L`.
  std::string parseShape(std::vector<int64_t> &shape) {
    if (!consume('('))
      return malformed("a tuple for 'shape'");
    shape.clear();
    bool comma = false;
    while (true) {
      skipBlanks();
      if (consume(')'))
        break;
      int64_t extent;
      if (std::string error = parseExtent(extent); !error.empty())
        return error;
      shape.push_back(extent);
      skipBlanks();
      comma = consume(',');
      if (!comma) {
        if (!consume(')'))
          return malformed("',' or ')' in 'shape'");
        break;
      }
    }
    if (shape.size() == 1 && !comma)
      return malformed("',' in the one-tuple 'shape'");
    return "";
  }

  std::string parseExtent(int64_t &extent) {
    bool negative = consume('-');
    size_t first = at;
    while (at < text.size() &&
           std::isdigit(static_cast<unsigned char>(text[at])))
      ++at;
    if (at == first)
      return malformed("an integer in 'shape'");
    std::string digits = text.substr(first, at - first);
    consume('L');
    if (negative)
      return ".npy header declares a negative extent -" + shown(digits) +
             " in its shape";
    extent = 0;
    for (char digit : digits)
      if (__builtin_mul_overflow(extent, 10, &extent) ||
          __builtin_add_overflow(extent, digit - '0', &extent))
        return ".npy header declares an impossible extent " + shown(digits) +
               " in its shape";
    return "";
  }

  const std::string &text;
  size_t at = 0;
};

/// Where the header starts and how long it says it is, from the bytes
/// before it. "" or an error naming `name`.
std::string readPreamble(const std::string &bytes, const std::string &name,
                         size_t &headerStart, uint64_t &headerLength) {
  if (bytes.size() < kMagicSize ||
      std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    return name + ": not a .npy file (no \\x93NUMPY magic)";
  if (bytes.size() < kVersionEnd)
    return name + ": truncated .npy header";
  unsigned major = static_cast<unsigned char>(bytes[6]);
  if (major != 1 && major != 2 && major != 3)
    return name + ": unsupported .npy format version " + std::to_string(major) +
           "." + std::to_string(static_cast<unsigned char>(bytes[7]));
  // Version 1.0 has a 16-bit length, 2.0 and 3.0 a 32-bit one.
  size_t width = major == 1 ? 2 : 4;
  headerStart = kVersionEnd + width;
  if (bytes.size() < headerStart)
    return name + ": truncated .npy header";
  headerLength = 0;
  for (size_t i = width; i-- > 0;)
    headerLength =
        headerLength << 8 | static_cast<unsigned char>(bytes[kVersionEnd + i]);
  if (headerLength > kMaxHeaderLength)
    return name + ": .npy header of " + std::to_string(headerLength) +
           " bytes is longer than any such array's (at most " +
           std::to_string(kMaxHeaderLength) + ")";
  return "";
}

/// The dtype `descr` names, or an error naming `name`.
std::string readDescr(const std::string &descr, const std::string &name,
                      Header &header) {
  static const struct {
    const char *descr;
    DType dtype;
    size_t size;
  } kKnown[] = {{"<f4", DType::Float32, 4},
                {"<i4", DType::Int32, 4},
                {"<i8", DType::Int64, 8}};
  for (const auto &known : kKnown)
    if (descr == known.descr) {
      header.dtype = known.dtype;
      header.elementSize = known.size;
      return "";
    }
  return name + ": unsupported dtype '" + shown(descr) +
         "' (expected '<f4', or '<i4'/'<i8' for lengths)";
}

/// Reads the header at the start of `bytes` (which may end anywhere after
/// it). "" or an error naming `name`.
std::string parseHeader(const std::string &bytes, const std::string &name,
                        Header &header) {
  size_t headerStart;
  uint64_t headerLength;
  if (std::string e = readPreamble(bytes, name, headerStart, headerLength);
      !e.empty())
    return e;
  if (bytes.size() - headerStart < headerLength)
    return name + ": truncated .npy header";
  std::string text = bytes.substr(headerStart, headerLength);
  std::string descr;
  bool fortranOrder = false;
  if (std::string e =
          HeaderParser(text).parse(descr, fortranOrder, header.shape);
      !e.empty())
    return name + ": " + e;
  if (std::string e = readDescr(descr, name, header); !e.empty())
    return e;
  if (fortranOrder)
    return name + ": fortran_order arrays are not supported (save it in C "
                  "order, e.g. np.ascontiguousarray)";
  // A shape of terabytes is an error here, before anything is allocated.
  int64_t count = 1, bytesNeeded;
  for (int64_t extent : header.shape)
    if (__builtin_mul_overflow(count, extent, &count))
      count = -1;
  if (count < 0 ||
      __builtin_mul_overflow(count, int64_t(header.elementSize), &bytesNeeded))
    return name + ": its shape " + shapeString(header.shape) +
           " needs more than 2^63 bytes";
  header.dataStart = headerStart + headerLength;
  header.dataBytes = uint64_t(bytesNeeded);
  return "";
}

/// "" when `present` bytes are the data `header` declares, else an error
/// naming `name`.
std::string checkDataSize(const Header &header, uint64_t present,
                          const std::string &name) {
  if (present < header.dataBytes)
    return name + ": holds " + std::to_string(present / header.elementSize) +
           " elements but its shape " + shapeString(header.shape) + " needs " +
           std::to_string(header.dataBytes / header.elementSize);
  if (present > header.dataBytes)
    return name + ": has " + std::to_string(present - header.dataBytes) +
           " bytes after the data its shape " + shapeString(header.shape) +
           " needs";
  return "";
}

/// Appends up to `count` bytes read from `fd` to `bytes`, fewer only where
/// the file ends. Reads at most what `bytes` has room for or kStreamChunk
/// at a time, so the buffer grows with what arrives.
std::string appendFrom(int fd, uint64_t count, std::string &bytes,
                       const std::string &name) {
  while (count > 0) {
    size_t room = std::max(bytes.capacity() - bytes.size(), kStreamChunk);
    size_t chunk = size_t(std::min<uint64_t>(count, room));
    size_t old = bytes.size();
    bytes.resize(old + chunk);
    ssize_t got = ::read(fd, &bytes[old], chunk);
    bytes.resize(old + (got > 0 ? size_t(got) : 0));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return name + ": cannot read (" + std::strerror(errno) + ")";
    if (got == 0)
      break;
    count -= uint64_t(got);
  }
  return "";
}

/// True when `fd` has at least one more byte to give.
bool hasMore(int fd) {
  char extra;
  ssize_t got;
  do
    got = ::read(fd, &extra, 1);
  while (got < 0 && errno == EINTR);
  return got > 0;
}

/// What a file is, for a message that says it is not a regular file.
const char *fileKind(mode_t mode) {
  if (S_ISREG(mode))
    return "a regular file";
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISCHR(mode))
    return "a character device";
  if (S_ISBLK(mode))
    return "a block device";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  return "an unknown kind of file";
}

/// Reads the preamble and the header from `fd` onto `bytes`, each read
/// bounded by what the bytes before it declare: the version, then the
/// header's length. /dev/zero fails at its first bytes.
std::string readHeaderFrom(int fd, const std::string &name, std::string &bytes,
                           Header &header) {
  if (std::string e = appendFrom(fd, kVersionEnd, bytes, name); !e.empty())
    return e;
  if (bytes.size() == kVersionEnd)
    if (std::string e = appendFrom(fd, bytes[6] == 1 ? 2 : 4, bytes, name);
        !e.empty())
      return e;
  size_t headerStart;
  uint64_t headerLength;
  if (std::string e = readPreamble(bytes, name, headerStart, headerLength);
      !e.empty())
    return e;
  if (std::string e = appendFrom(fd, headerLength, bytes, name); !e.empty())
    return e;
  return parseHeader(bytes, name, header);
}

} // namespace

std::string cellc::npy::parse(const std::string &bytes, const std::string &name,
                              Array &array) {
  Header header;
  if (std::string e = parseHeader(bytes, name, header); !e.empty())
    return e;
  if (std::string e =
          checkDataSize(header, bytes.size() - header.dataStart, name);
      !e.empty())
    return e;
  size_t count = size_t(header.dataBytes / header.elementSize);
  const char *data = bytes.data() + header.dataStart;
  array.dtype = header.dtype;
  array.shape = std::move(header.shape);
  array.floats.clear();
  array.ints.clear();
  // An empty vector's data() may be null, which memcpy must not get even
  // for zero bytes (the fuzzer's first finding: shape (0, 4)).
  if (count == 0)
    return "";
  if (array.dtype == DType::Float32) {
    array.floats.resize(count);
    std::memcpy(array.floats.data(), data, count * 4);
  } else if (array.dtype == DType::Int32) {
    std::vector<int32_t> values(count);
    std::memcpy(values.data(), data, count * 4);
    array.ints.assign(values.begin(), values.end());
  } else {
    array.ints.resize(count);
    std::memcpy(array.ints.data(), data, count * 8);
  }
  return "";
}

std::string cellc::npy::readBytes(const std::string &path, std::string &bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer only to be
  // refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return path + ": cannot open file (" + std::strerror(errno) + ")";
  struct stat info;
  std::string error;
  if (fstat(fd, &info) != 0) {
    error = path + ": cannot read (" + std::strerror(errno) + ")";
  } else if (!S_ISREG(info.st_mode)) {
    error = path + ": not a regular file (" + fileKind(info.st_mode) + ")";
  } else {
    bytes.clear();
    bytes.reserve(size_t(info.st_size));
    error = appendFrom(fd, uint64_t(info.st_size), bytes, path);
    if (error.empty() && bytes.size() != uint64_t(info.st_size))
      error = path + ": changed size while being read";
  }
  ::close(fd);
  return error;
}

std::string cellc::npy::readFile(int fd, const std::string &name,
                                 Array &array) {
  struct stat info;
  if (fstat(fd, &info) != 0)
    return name + ": cannot read (" + std::strerror(errno) + ")";
  if (S_ISDIR(info.st_mode))
    return name + ": not a regular file (a directory)";
  std::string bytes;
  Header header;
  if (std::string e = readHeaderFrom(fd, name, bytes, header); !e.empty())
    return e;
  if (S_ISREG(info.st_mode)) {
    // A regular file's size tells whether the data is all there before any
    // of it is read.
    uint64_t size = uint64_t(std::max<off_t>(info.st_size, 0));
    uint64_t present = size > header.dataStart ? size - header.dataStart : 0;
    if (std::string e = checkDataSize(header, present, name); !e.empty())
      return e;
    bytes.reserve(size_t(size));
  }
  if (std::string e = appendFrom(fd, header.dataBytes, bytes, name); !e.empty())
    return e;
  if (bytes.size() - header.dataStart == header.dataBytes && hasMore(fd))
    return name + ": holds more bytes than its shape " +
           shapeString(header.shape) + " needs (" + fileKind(info.st_mode) +
           ", read as far as its header declares)";
  return parse(bytes, name, array);
}

std::string cellc::npy::readFile(const std::string &path, Array &array) {
  // A blocking open: a FIFO is read once its writer opens it, as cat would.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return path + ": cannot open file (" + std::strerror(errno) + ")";
  std::string error = readFile(fd, path, array);
  ::close(fd);
  return error;
}

std::string cellc::npy::serialize(const std::string &descr,
                                  const std::vector<int64_t> &shape,
                                  const void *data, size_t elementSize) {
  std::string shapeText = "(";
  for (int64_t extent : shape)
    shapeText += std::to_string(extent) + ", ";
  if (shape.size() > 1)
    shapeText.resize(shapeText.size() - 2);
  else if (shape.size() == 1)
    shapeText.resize(shapeText.size() - 1); // keep the comma: `(3,)`
  shapeText += ")";
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + shapeText +
                       ", }";
  // Pad with spaces so the data starts at a multiple of 64; end with '\n'.
  size_t total = kMagicSize + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic, kMagicSize);
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  size_t count = 1;
  for (int64_t extent : shape)
    count *= static_cast<size_t>(extent);
  bytes.append(static_cast<const char *>(data), count * elementSize);
  return bytes;
}

std::string cellc::npy::writeBytes(const std::string &path,
                                   const std::string &bytes) {
  static std::atomic<unsigned> calls{0};
  std::string temporary =
      path + ".tmp" + std::to_string(getpid()) + "." + std::to_string(calls++);
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file)
      return path + ": cannot open " + temporary + " for writing";
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    file.close();
    if (!file) {
      std::remove(temporary.c_str());
      return path + ": write failed";
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return path + ": cannot rename " + temporary + " into place";
  }
  return "";
}

std::string cellc::npy::writeFile(const std::string &path,
                                  const std::vector<int64_t> &shape,
                                  const float *data) {
  return writeBytes(path, serialize("<f4", shape, data, 4));
}

std::string cellc::npy::writeFile(const std::string &path,
                                  const std::vector<int64_t> &shape,
                                  const int32_t *data) {
  return writeBytes(path, serialize("<i4", shape, data, 4));
}
