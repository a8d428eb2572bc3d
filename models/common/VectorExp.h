//===- models/common/VectorExp.h - exp that vectorises inline ---*- C++ -*-===//
//
// exp(x) for the layers' element-wise loops (log-softmax, attention's
// softmax and tanh), in straight-line arithmetic that clang vectorises at
// the loop's full width. With -fveclib=libmvec, clang 16 calls glibc's
// 8-lane AVX2 expf even where the loop runs 16 lanes (it knows no AVX-512
// variant), and exp was 3% of an NMT update and 6% of a beam-search step
// (issue #47). The method is the cells' own exp (codegen/ApproximateMath.cpp,
// Cephes' expf): about 1 ulp.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_VECTOREXP_H
#define CELLC_MODELS_COMMON_VECTOREXP_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace models {

/// 2^n for n in [-126, 127], as a float built from its exponent bits.
inline float powerOfTwo(int32_t n) {
  const uint32_t bits = uint32_t(n + 127) << 23;
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

/// exp(x) to about 1 ulp: x = k ln2 + r with k = round(x / ln2) and ln2 in
/// two constants (the first exact in a few bits), so that r is exact and
/// |r| <= ln2 / 2; exp(r) = 1 + r + r^2 P(r) with P of degree 5; times 2^k
/// in two halves, so that every k from gradual underflow to overflow has a
/// normal power of two. +inf gives inf, -inf 0, NaN NaN.
inline float vectorExp(float x) {
  // Past these exp(x) is inf or 0 anyway; k stays in range.
  float clamped = x > 88.8f ? 88.8f : x;
  clamped = clamped < -104.f ? -104.f : clamped;
  const float k = std::floor(std::fma(clamped, 1.44269504088896341f, 0.5f));
  float r = std::fma(k, -0.693359375f, clamped);
  r = std::fma(k, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float y = std::fma(p, r * r, r) + 1.f;
  const int32_t n = int32_t(k), half = n >> 1;
  const float result = y * powerOfTwo(half) * powerOfTwo(n - half);
  return x != x ? x : result;
}

} // namespace models

#endif
