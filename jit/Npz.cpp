//===- Npz.cpp - Read and write NumPy .npz archives -----------------------===//
//
// The ZIP subset NumPy uses (PKWARE APPNOTE 6.3): the central directory
// names each entry and gives its method, CRC-32, sizes and local header
// offset; zip64 extra fields hold the sizes when a 32-bit field is
// 0xffffffff (np.savez always writes them into local headers).
//
//===----------------------------------------------------------------------===//

#include "jit/Npz.h"

#include <zlib.h>

#include <algorithm>

using namespace cellc::npy;

namespace {

const uint32_t kLocalHeader = 0x04034b50;
const uint32_t kCentralHeader = 0x02014b50;
const uint32_t kEndOfDirectory = 0x06054b50;
const uint16_t kZip64Extra = 0x0001;
const uint32_t kMax32 = 0xffffffffu;
/// 1980-01-01, the earliest date a ZIP header can hold.
const uint16_t kDosDate = (1 << 5) | 1;
/// Deflate expands by at most ~1032:1; a larger claim is a lie.
const uint64_t kMaxDeflateRatio = 1032;

/// Little-endian reads that fail instead of running past the end.
class Reader {
public:
  Reader(const std::string &bytes, size_t at) : bytes(bytes), at(at) {}
  bool ok() const { return good; }
  size_t position() const { return at; }
  uint64_t read(size_t width) {
    if (!good || at > bytes.size() || width > bytes.size() - at) {
      good = false;
      return 0;
    }
    uint64_t value = 0;
    for (size_t i = width; i-- > 0;)
      value = value << 8 | static_cast<unsigned char>(bytes[at + i]);
    at += width;
    return value;
  }
  std::string take(size_t count) {
    if (!good || at > bytes.size() || count > bytes.size() - at) {
      good = false;
      return "";
    }
    at += count;
    return bytes.substr(at - count, count);
  }

private:
  const std::string &bytes;
  size_t at;
  bool good = true;
};

/// What the central directory says of one entry.
struct EntryInfo {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t packedSize = 0, size = 0, localOffset = 0;
};

/// Replaces the 32-bit fields that are 0xffffffff by the zip64 extra
/// field's values, which come in this order when present. False when a
/// field is 0xffffffff and the extra data does not hold its value.
bool applyZip64(const std::string &extra, EntryInfo &entry) {
  Reader fields(extra, 0);
  while (fields.ok() && fields.position() + 4 <= extra.size()) {
    uint16_t id = fields.read(2), length = fields.read(2);
    std::string data = fields.take(length);
    if (id != kZip64Extra || !fields.ok())
      continue;
    Reader value(data, 0);
    for (uint64_t *field : {&entry.size, &entry.packedSize,
                            &entry.localOffset})
      if (*field == kMax32)
        *field = value.read(8);
    return value.ok();
  }
  return entry.size != kMax32 && entry.packedSize != kMax32 &&
         entry.localOffset != kMax32;
}

/// The entries of the central directory; "" or what is wrong.
std::string readDirectory(const std::string &bytes,
                          std::vector<EntryInfo> &entries) {
  if (bytes.size() < 22)
    return "not a .npz archive (too short for a ZIP file)";
  // The end record is the last 22 bytes unless a comment follows it.
  size_t end = bytes.size() - 22, lowest = end > 65535 ? end - 65535 : 0;
  while (Reader(bytes, end).read(4) != kEndOfDirectory) {
    if (end == lowest)
      return "not a .npz archive (no ZIP end-of-directory record)";
    --end;
  }
  Reader record(bytes, end + 10);
  uint64_t count = record.read(2), directorySize = record.read(4),
           directoryOffset = record.read(4);
  if (count == 0xffff || directoryOffset == kMax32)
    return "zip64 archives with over 65535 entries or 4 GiB of "
           "directory offset are not supported";
  if (directoryOffset + directorySize > end)
    return "damaged ZIP directory";
  Reader at(bytes, directoryOffset);
  for (uint64_t i = 0; i < count; ++i) {
    EntryInfo entry;
    if (at.read(4) != kCentralHeader)
      return "damaged ZIP directory (entry " + std::to_string(i) + ")";
    at.take(4);
    entry.flags = at.read(2);
    entry.method = at.read(2);
    at.take(4);
    entry.crc = at.read(4);
    entry.packedSize = at.read(4);
    entry.size = at.read(4);
    uint16_t nameLength = at.read(2), extraLength = at.read(2),
             commentLength = at.read(2);
    at.take(8);
    entry.localOffset = at.read(4);
    entry.name = at.take(nameLength);
    bool sizesKnown = applyZip64(at.take(extraLength), entry);
    at.take(commentLength);
    if (!at.ok() || !sizesKnown)
      return "damaged ZIP directory (entry " + std::to_string(i) + ")";
    entries.push_back(entry);
  }
  return "";
}

/// Inflates raw deflate data (no zlib header) of a known size.
std::string inflateRaw(const std::string &packed, uint64_t size,
                       std::string &out) {
  out.assign(size, '\0');
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    return "zlib could not start";
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(packed.data()));
  stream.avail_in = static_cast<uInt>(packed.size());
  stream.next_out = reinterpret_cast<Bytef *>(out.data());
  stream.avail_out = static_cast<uInt>(size);
  int status = inflate(&stream, Z_FINISH);
  inflateEnd(&stream);
  if (status != Z_STREAM_END || stream.total_out != size)
    return "damaged compressed data";
  return "";
}

/// The stored bytes of one entry, checked against its CRC-32.
std::string entryBytes(const std::string &bytes, const EntryInfo &entry,
                       std::string &out) {
  if (entry.flags & 1)
    return "is encrypted";
  if (entry.method != 0 && entry.method != 8)
    return "uses ZIP method " + std::to_string(entry.method) +
           " (only stored and deflated entries are read)";
  // Sizes come from the file: check them before allocating anything.
  if (entry.size >= kMax32 || entry.packedSize >= kMax32)
    return "is 4 GiB or more (not supported)";
  if (entry.method == 0 ? entry.size != entry.packedSize
                        : entry.size > entry.packedSize * kMaxDeflateRatio +
                                           1024)
    return "declares a size its data cannot have";
  Reader local(bytes, entry.localOffset);
  if (local.read(4) != kLocalHeader)
    return "has a damaged local header";
  local.take(22);
  uint16_t nameLength = local.read(2), extraLength = local.read(2);
  local.take(nameLength + size_t(extraLength));
  std::string packed = local.take(entry.packedSize);
  if (!local.ok())
    return "is truncated";
  if (entry.method == 0)
    out = std::move(packed);
  else if (std::string e = inflateRaw(packed, entry.size, out); !e.empty())
    return "has " + e;
  if (out.size() != entry.size)
    return "has the wrong size";
  uLong crc = crc32(0L, reinterpret_cast<const Bytef *>(out.data()),
                    static_cast<uInt>(out.size()));
  if (crc != entry.crc)
    return "fails its CRC-32 check";
  return "";
}

} // namespace

std::string cellc::npy::readArchive(const std::string &path,
                                    std::map<std::string, Array> &arrays) {
  arrays.clear();
  std::string bytes;
  if (std::string e = readBytes(path, bytes); !e.empty())
    return e;
  return parseArchive(bytes, path, arrays);
}

std::string cellc::npy::parseArchive(const std::string &bytes,
                                     const std::string &name,
                                     std::map<std::string, Array> &arrays) {
  arrays.clear();
  std::vector<EntryInfo> entries;
  if (std::string e = readDirectory(bytes, entries); !e.empty())
    return name + ": " + e;
  // Entries may share data: bound what they may inflate to in all.
  uint64_t total = 0, budget = bytes.size() * kMaxDeflateRatio + 1024;
  for (const EntryInfo &entry : entries) {
    std::string arrayName = entry.name;
    if (arrayName.size() > 4 &&
        arrayName.compare(arrayName.size() - 4, 4, ".npy") == 0)
      arrayName.resize(arrayName.size() - 4);
    if (arrays.count(arrayName))
      return name + ": two entries name the array " + arrayName;
    total += std::min<uint64_t>(entry.size, budget);
    if (total > budget)
      return name + ": its entries declare more data than it can hold";
    std::string data;
    if (std::string e = entryBytes(bytes, entry, data); !e.empty())
      return name + ": entry " + entry.name + " " + e;
    if (std::string e =
            parse(data, name + ": entry " + entry.name, arrays[arrayName]);
        !e.empty())
      return e;
  }
  return "";
}

namespace {

void put(std::string &out, uint64_t value, int width) {
  for (int i = 0; i < width; ++i)
    out += static_cast<char>(value >> (8 * i) & 0xff);
}

/// The fields local and central headers share, from `version needed` on.
std::string commonFields(const std::string &name, uint32_t crc,
                         uint64_t size) {
  std::string out;
  put(out, 20, 2); // version needed: 2.0
  put(out, 0, 2);  // flags
  put(out, 0, 2);  // method: stored
  put(out, 0, 2);  // time
  put(out, kDosDate, 2);
  put(out, crc, 4);
  put(out, size, 4); // packed size
  put(out, size, 4); // size
  put(out, name.size(), 2);
  put(out, 0, 2); // extra length
  return out;
}

/// The archive's bytes; "" in `error` unless it cannot be a plain ZIP.
std::string buildArchive(const std::map<std::string, ArchiveEntry> &arrays,
                         std::string &error) {
  std::string body, directory;
  for (const auto &[name, entry] : arrays) {
    std::string data = serialize("<f4", entry.shape, entry.data, 4);
    std::string file = name + ".npy";
    if (file.size() > 0xffff) {
      error = "an array name is longer than a ZIP entry name can be";
      return "";
    }
    if (data.size() >= kMax32 || body.size() >= kMax32) {
      error = "array " + name + " makes the archive over 4 GiB (zip64 "
                                "is not written)";
      return "";
    }
    uint32_t crc = crc32(0L, reinterpret_cast<const Bytef *>(data.data()),
                         static_cast<uInt>(data.size()));
    std::string common = commonFields(file, crc, data.size());
    put(directory, kCentralHeader, 4);
    put(directory, 20, 2); // made by: 2.0
    directory += common;
    put(directory, 0, 6); // comment length, first disk, internal attributes
    put(directory, 0, 4); // external attributes
    put(directory, body.size(), 4);
    directory += file;
    put(body, kLocalHeader, 4);
    body += common + file + data;
  }
  if (arrays.size() > 0xfffe || body.size() >= kMax32) {
    error = "too many or too large arrays for a ZIP without zip64";
    return "";
  }
  std::string end;
  put(end, kEndOfDirectory, 4);
  put(end, 0, 4); // disk numbers
  put(end, arrays.size(), 2);
  put(end, arrays.size(), 2);
  put(end, directory.size(), 4);
  put(end, body.size(), 4);
  put(end, 0, 2); // comment length
  return body + directory + end;
}

} // namespace

std::string
cellc::npy::writeArchive(const std::string &path,
                         const std::map<std::string, ArchiveEntry> &arrays) {
  std::string error;
  std::string bytes = buildArchive(arrays, error);
  if (!error.empty())
    return path + ": " + error;
  return writeBytes(path, bytes);
}
