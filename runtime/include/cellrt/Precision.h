//===- cellrt/Precision.h - What a cell's products read ---------*- C++ -*-===//
//
// The precision of a cell's matrix products, shared by the plan, the
// runtime's calls and the model drivers' own layers.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_PRECISION_H
#define CELLRT_PRECISION_H

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace cellrt {

/// What the plan's matrix products read: f32, or operands rounded to
/// bfloat16 (8-bit mantissa) and summed in f32. Gate math, states and
/// every array a caller sees stay f32 either way.
enum class Precision { F32, BF16 };

/// "f32" or "bf16", as `cellc --precision` and the plan spell them.
const char *precisionName(Precision precision);
/// The precision a name spells, or nullopt.
std::optional<Precision> parsePrecision(std::string_view name);

/// `value` rounded to bfloat16, as its bits: to nearest, ties to even; a
/// NaN stays a (quiet) NaN. What bf16 products do to every operand, for a
/// caller that writes an operand in bf16 itself
/// (KeepRoundedOperands::lend).
inline uint16_t roundToBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  bool isNaN = (bits & 0x7fffffffu) > 0x7f800000u;
  return isNaN ? static_cast<uint16_t>((bits >> 16) | 0x40u)
               : static_cast<uint16_t>(rounded >> 16);
}

} // namespace cellrt

#endif // CELLRT_PRECISION_H
