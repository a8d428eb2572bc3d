//===- cellrt/Precision.h - What a cell's products read ---------*- C++ -*-===//
//
// The precision of a cell's matrix products, shared by the plan, the
// runtime's calls and the model drivers' own layers.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_PRECISION_H
#define CELLRT_PRECISION_H

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

} // namespace cellrt

#endif // CELLRT_PRECISION_H
