//===- Gemm.h - Matrix products for the executor ----------------*- C++ -*-===//
//
// The GEMM shapes a plan needs (forward, backward and weight gradients), behind
// a function so the backend (oneDNN today) can change without touching the
// executor.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_GEMM_H
#define CELLRT_GEMM_H

#include "cellrt/KeepRoundedOperands.h"
#include "cellrt/Plan.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace cellrt {
namespace detail {

/// out[rows, n] = beta * out + in[rows, k] · weight[n, k]ᵀ, all row-major with
/// the given row strides (in floats). beta is 0 (overwrite) or 1 (accumulate).
Status gemmTransposedWeight(int64_t rows, int64_t n, int64_t k, const float *in,
                            int64_t inStride, const float *weight,
                            int64_t weightStride, float *out, int64_t outStride,
                            float beta = 0.0f);

/// out[rows, n] += in[rows, k] · weight[k, n] (the backward direction of
/// gemmTransposedWeight), all row-major with the given row strides.
Status gemmAccumulate(int64_t rows, int64_t n, int64_t k, const float *in,
                      int64_t inStride, const float *weight,
                      int64_t weightStride, float *out, int64_t outStride);

/// out[m, n] += a[k, m]ᵀ · b[k, n] (a weight gradient: k runs over the
/// T*B rows), all row-major with the given row strides.
Status gemmAccumulateTransposedInput(int64_t m, int64_t n, int64_t k,
                                     const float *a, int64_t aStride,
                                     const float *b, int64_t bStride,
                                     float *out, int64_t outStride);

/// out[m, n] = beta * out + op(a) · op(b) with both operands rounded to
/// bfloat16 and summed in f32 (a plan in bf16 precision): op(a) is a [m, k]
/// or, transposed, aᵀ of a stored [k, m]; op(b) a [k, n] or bᵀ of a stored
/// [n, k]; row-major with the given row strides, beta 0 or 1. The three
/// products above are gemmBf16(false, true, ...), (false, false, ...) and
/// (true, false, ...).
Status gemmBf16(bool transposeA, bool transposeB, int64_t m, int64_t n,
                int64_t k, const float *a, int64_t aStride, const float *b,
                int64_t bStride, float *out, int64_t outStride, float beta);

/// The runtime's backward runs its products after the steps in one
/// (cellrt/KeepRoundedOperands.h).
using cellrt::KeepRoundedOperands;

/// How many operands bf16 products have read from a kept copy (tests).
int64_t bf16OperandsReused();

/// A product other than gemmBf16 (a packed weight's) wrote [rows, ...] at
/// `out`, `outStride` apart: the KeepRoundedOperands copies it overlaps
/// are stale, and are dropped.
void forgetRoundedCopiesOf(const float *out, int64_t rows, int64_t outStride);

/// How many products have read bfloat16 in this process (gemmBf16's, bf16
/// PackedProducts', and each product or accumulation of a bf16 tiled call,
/// once per call): tests check which calls multiply in bf16.
int64_t bf16ProductsSoFar();
void countBf16Product();

/// Success where oneDNN multiplies bf16 on this CPU, else the error to
/// report for a bf16 plan.
Status bf16Available();

/// target[r * columns + c] = source[r * stride + c] rounded to the nearest
/// bfloat16 (ties to even; NaN stays NaN), as its upper 16 bits.
void roundToBf16(const float *source, int64_t rows, int64_t columns,
                 int64_t stride, uint16_t *target);

} // namespace detail

/// A weight [n, k] packed once into the layout oneDNN's matmul primitive
/// multiplies fastest (blocked for its brgemm kernels; with dense rows one
/// layout serves every row count), for the products gemmTransposedWeight
/// computes. sgemm
/// instead packs a weight it reads transposed on every call: a [10, 512]
/// by [2048, 512]ᵀ product took 582 µs that way, 259 µs by the weight kept
/// transposed and 212 µs packed here. A primitive per row count and
/// strides is made on first use and kept (cellrt multiplies at most 256
/// rows this way, Execution.cpp); a PackedProduct may be shared by
/// concurrent calls, each execution with its thread's own scratchpad.
/// In bf16 precision the weight is packed rounded to bfloat16, and each
/// multiply() rounds its input rows into a copy first.
class PackedProduct {
public:
  /// What multiply() computes with the weight [n, k]. Forward:
  /// out[rows, n] = in[rows, k] · weightᵀ (gemmTransposedWeight's
  /// product); Backward: out[rows, k] += in[rows, n] · weight
  /// (gemmAccumulate's, a step's state gradient).
  enum class Use { Forward, Backward };

  /// Null with `error` set if oneDNN cannot pack the weight.
  static std::unique_ptr<PackedProduct>
  pack(const float *weight, int64_t n, int64_t k, std::string &error,
       Precision precision = Precision::F32, Use use = Use::Forward);
  ~PackedProduct();
  PackedProduct(const PackedProduct &) = delete;
  PackedProduct &operator=(const PackedProduct &) = delete;

  /// How many weights have been packed in this process (tests check which
  /// calls pack).
  static int64_t packedSoFar();
  /// How many products multiply() has run in this process.
  static int64_t multipliedSoFar();

  int64_t n() const { return columns; }
  int64_t k() const { return depth; }
  Precision precision() const;
  Use use() const;
  /// Whether oneDNN multiplies `rows` rows at these strides by the weight
  /// as packed (it might want another layout for some row count).
  bool accepts(int64_t rows, int64_t inStride, int64_t outStride) const;
  /// The product of use(), row-major with the given row strides; an error
  /// where accepts() is false.
  Status multiply(int64_t rows, const float *in, int64_t inStride, float *out,
                  int64_t outStride) const;
  /// multiply(), or nullopt where accepts() is false: one lookup of the
  /// primitive for both.
  std::optional<Status> tryMultiply(int64_t rows, const float *in,
                                    int64_t inStride, float *out,
                                    int64_t outStride) const;

private:
  struct Impl;
  PackedProduct(std::unique_ptr<Impl> impl, int64_t n, int64_t k);
  std::unique_ptr<Impl> impl;
  int64_t columns, depth;
};

} // namespace cellrt

#endif // CELLRT_GEMM_H
