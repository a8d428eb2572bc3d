//===- Npy.cpp - Read and write NumPy .npy arrays -------------------------===//

#include "jit/Npy.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <unistd.h>

using namespace cellc::npy;

int64_t Array::numElements() const {
  // parse() has checked the product fits in int64.
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

/// The text after `'key':` in the header dict, with leading blanks skipped;
/// empty if the key is missing.
std::string valueOf(const std::string &header, const std::string &key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    at = header.find("\"" + key + "\"");
  if (at == std::string::npos)
    return "";
  at = header.find(':', at);
  if (at == std::string::npos)
    return "";
  ++at;
  while (at < header.size() && header[at] == ' ')
    ++at;
  return header.substr(at);
}

/// Parses `(3, 4)`, `(3,)` or `()` at the start of `text`. Returns "" or
/// what is wrong; an extent that does not fit in int64 is an error, never
/// an exception.
std::string parseShape(const std::string &text, std::vector<int64_t> &shape) {
  if (text.empty() || text[0] != '(')
    return "has no readable shape";
  size_t close = text.find(')');
  if (close == std::string::npos)
    return "has no readable shape";
  std::string inner = text.substr(1, close - 1);
  std::stringstream stream(inner);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t begin = item.find_first_not_of(" L");
    if (begin == std::string::npos)
      continue; // the empty item after a trailing comma
    size_t end = item.find_last_not_of(" L");
    std::string digits = item.substr(begin, end - begin + 1);
    if (digits.find_first_not_of("0123456789") != std::string::npos)
      return "has no readable shape";
    errno = 0;
    long long extent = std::strtoll(digits.c_str(), nullptr, 10);
    if (errno == ERANGE)
      return "declares an impossible extent " + digits + " in its shape";
    shape.push_back(extent);
  }
  return "";
}

/// The element count of `shape`, or nullopt when it overflows int64.
std::optional<int64_t> checkedCount(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t extent : shape)
    if (__builtin_mul_overflow(count, extent, &count))
      return std::nullopt;
  return count;
}

} // namespace

std::string cellc::npy::parse(const std::string &bytes, const std::string &name,
                              Array &array) {
  if (bytes.size() < kMagicSize + 4 ||
      std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    return name + ": not a .npy file (no \\x93NUMPY magic)";
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = static_cast<unsigned char>(bytes[8]) |
                   static_cast<unsigned char>(bytes[9]) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return name + ": truncated .npy header";
    headerLength = 0;
    for (int i = 3; i >= 0; --i)
      headerLength =
          headerLength << 8 | static_cast<unsigned char>(bytes[8 + i]);
    headerStart = 12;
  } else {
    return name + ": unsupported .npy format version " + std::to_string(major) +
           "." + std::to_string(static_cast<unsigned char>(bytes[7]));
  }
  if (bytes.size() < headerStart + headerLength)
    return name + ": truncated .npy header";
  std::string header = bytes.substr(headerStart, headerLength);

  std::string descr = valueOf(header, "descr");
  size_t elementSize;
  if (descr.rfind("'<f4'", 0) == 0 || descr.rfind("\"<f4\"", 0) == 0) {
    array.dtype = DType::Float32;
    elementSize = 4;
  } else if (descr.rfind("'<i4'", 0) == 0 || descr.rfind("\"<i4\"", 0) == 0) {
    array.dtype = DType::Int32;
    elementSize = 4;
  } else if (descr.rfind("'<i8'", 0) == 0 || descr.rfind("\"<i8\"", 0) == 0) {
    array.dtype = DType::Int64;
    elementSize = 8;
  } else {
    std::string shown = descr.substr(0, descr.find_first_of(",}"));
    return name + ": unsupported dtype " + shown +
           " (expected '<f4', or '<i4'/'<i8' for lengths)";
  }
  std::string fortran = valueOf(header, "fortran_order");
  if (fortran.rfind("True", 0) == 0)
    return name + ": fortran_order arrays are not supported (save it in C "
                  "order, e.g. np.ascontiguousarray)";
  if (fortran.rfind("False", 0) != 0)
    return name + ": .npy header has no fortran_order";
  array.shape.clear();
  if (std::string e = parseShape(valueOf(header, "shape"), array.shape);
      !e.empty())
    return name + ": .npy header " + e;

  // Compare the declared size with the bytes present before allocating: a
  // shape of terabytes must not become an allocation of terabytes.
  std::optional<int64_t> declared = checkedCount(array.shape);
  size_t dataStart = headerStart + headerLength;
  size_t present = (bytes.size() - dataStart) / elementSize;
  if (!declared || uint64_t(*declared) > present)
    return name + ": holds " + std::to_string(present) +
           " elements but its shape " + shapeString(array.shape) + " needs " +
           (declared ? std::to_string(*declared) : "more than 2^63");
  size_t count = size_t(*declared);
  const char *data = bytes.data() + dataStart;
  array.floats.clear();
  array.ints.clear();
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

std::string cellc::npy::readBytes(const std::string &path,
                                  std::string &bytes) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return path + ": cannot open file";
  std::stringstream contents;
  contents << file.rdbuf();
  bytes = contents.str();
  return "";
}

std::string cellc::npy::readFile(const std::string &path, Array &array) {
  std::string bytes;
  if (std::string e = readBytes(path, bytes); !e.empty())
    return e;
  return parse(bytes, path, array);
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
  std::string temporary = path + ".tmp" + std::to_string(getpid()) + "." +
                          std::to_string(calls++);
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
