//===- cellrt/PlanTables.h - The plan as an object carries it ---*- C++ -*-===//
//
// An object compiled by cellc carries its plan as binary tables
// (docs/plan-format.md, "The tables"): a header with a magic, a version and
// the size, then declarations and operations by integer index, dimension
// expressions as coefficient vectors over the dims, and enums as integers.
// Decoding checks every index and byte count, then validatePlan's rules.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_PLANTABLES_H
#define CELLRT_PLANTABLES_H

#include "cellrt/Plan.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cellrt {

/// The first 8 bytes of the tables.
inline constexpr char kPlanTablesMagic[8] = {'c', 'e', 'l', 'l', 'c',
                                             'P', 'T', '\0'};
/// The tables' version that this runtime reads and this cellc writes. A new
/// version means an older runtime cannot read the tables.
inline constexpr uint32_t kPlanTablesVersion = 1;
/// Magic, version (u32), reserved (u32), size of the whole tables (u64).
inline constexpr size_t kPlanTablesHeaderSize = 24;

/// The tables of a plan (which must pass validatePlan).
std::string encodePlan(const Plan &plan);

/// Decodes and validates `bytes`, which hold the tables exactly.
Expected<Plan> decodePlan(std::string_view bytes);

/// Decodes the tables at `tables`, whose size their header gives (an
/// object's `cellc_<cell>_plan`, cellrt_image::plan). Text from a cellc
/// older than the tables gets a "recompile" error.
Expected<Plan> decodePlanImage(const char *tables);

/// The bytes the tables at `tables` span, from their header; 0 when they do
/// not start with the magic.
size_t planTablesSize(const char *tables);

} // namespace cellrt

#endif // CELLRT_PLANTABLES_H
