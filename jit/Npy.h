//===- Npy.h - Read and write NumPy .npy arrays -----------------*- C++ -*-===//
//
// A small reader/writer for the arrays `cellc run` exchanges with its
// callers: format versions 1.0, 2.0 and 3.0, little-endian float32 ('<f4')
// and int32/int64 ('<i4', '<i8'), C order only. No LLVM, MLIR or runtime
// dependency; errors are returned as text, nothing throws or prints.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_JIT_NPY_H
#define CELLC_JIT_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace cellc::npy {

/// The element type of an array as stored.
enum class DType { Float32, Int32, Int64 };

/// A dense C-order array. Float arrays fill `floats`; integer arrays fill
/// `ints` (int32 and int64 alike, widened).
struct Array {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  std::vector<float> floats;
  std::vector<int64_t> ints;

  int64_t numElements() const;
};

/// `[2, 3, 4]`, `[]` for a scalar.
std::string shapeString(const std::vector<int64_t> &shape);

/// The whole regular file at `path` in `bytes`, as many bytes as its size
/// says. Anything else (a FIFO, /dev/zero, a directory) is an error:
/// nothing bounds what it would give. Returns "" or an error starting with
/// the path.
std::string readBytes(const std::string &path, std::string &bytes);

/// Writes `bytes` to `path` through a temporary file renamed into place, so
/// a failed write never leaves half a file and concurrent writers never
/// share the temporary. Returns "" or an error starting with the path.
std::string writeBytes(const std::string &path, const std::string &bytes);

/// Reads `path`. Returns "" on success, else an error starting with the
/// path. Reads no more than the header declares: a regular file whose size
/// differs from what its header needs is an error before its data is read;
/// a FIFO or device is read up to the declared size, and is an error if it
/// has more (or less) to give.
std::string readFile(const std::string &path, Array &array);

/// Reads a .npy from the open descriptor `fd` (left open), as readFile
/// reads a path; `name` prefixes errors.
std::string readFile(int fd, const std::string &name, Array &array);

/// Parses the bytes of a .npy file; `name` prefixes errors. The header must
/// be numpy's dict (exactly 'descr', 'fortran_order' and 'shape', then
/// spaces and a newline) and the data exactly what its shape needs.
std::string parse(const std::string &bytes, const std::string &name,
                  Array &array);

/// Writes a float32 array (version 1.0 header). Returns "" on success.
std::string writeFile(const std::string &path,
                      const std::vector<int64_t> &shape, const float *data);

/// Writes an int32 array (version 1.0 header). Returns "" on success.
std::string writeFile(const std::string &path,
                      const std::vector<int64_t> &shape, const int32_t *data);

/// The bytes of a .npy file holding `shape` elements of `descr` ('<f4',
/// '<i4' or '<i8') copied from `data`.
std::string serialize(const std::string &descr,
                      const std::vector<int64_t> &shape, const void *data,
                      size_t elementSize);

} // namespace cellc::npy

#endif // CELLC_JIT_NPY_H
