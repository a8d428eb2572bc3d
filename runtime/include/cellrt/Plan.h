//===- cellrt/Plan.h - The execution plan of a compiled cell ----*- C++ -*-===//
//
// cellc compiles a cell into fused kernels plus a plan: which buffers to
// allocate, which matrix products to run and in what order to call the
// kernels. The plan travels as typed, versioned tables (PlanTables.h,
// docs/plan-format.md); this header holds its in-memory form, the one
// validator of its rules and the printer of its text form, which is for
// people and tests: nothing reads it back to run. Nothing here depends on
// LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_PLAN_H
#define CELLRT_PLAN_H

#include "cellrt/DimExpr.h"
#include "cellrt/InitScheme.h"
#include "cellrt/PlanEnums.inc"
#include "cellrt/Precision.h"
#include "cellrt/Status.h"

#include <cassert>
#include <cstdint>
#include <optional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cellrt {

using cellc::DimExpr;

/// A kernel argument or GEMM operand: `input:x`, `state:h`, `next:h`,
/// `param:b`, `seq:p`, `step:q` or `out`, and in backward operations the
/// gradient references `dnext:h`, `dstate:h`, `dout` and `dinput:x`;
/// optionally with a column offset (`seq:p+2*H`).
struct Ref {
  /// Input, State, Next, Param, Seq, Step, Out; in backward only Dnext (the
  /// gradient flowing into the state after this step), Dstate (the gradient
  /// of the state before it), Dout (the caller's output gradient at this
  /// step) and Dinput (the caller's input gradient). Listed once, in
  /// schedule/PlanEnums.td.
  enum class Kind {
#define CELLRT_ENUM_CASE(name, value, text) name = value,
    CELLRT_PLAN_REF_KINDS(CELLRT_ENUM_CASE)
#undef CELLRT_ENUM_CASE
  };

  Kind kind = Kind::Out;
  /// The declared name it refers to; empty for `out` and `dout`.
  std::string name;
  /// The first column of the argument within its array; zero if none.
  DimExpr column;

  bool operator==(const Ref &other) const;
  bool operator!=(const Ref &other) const { return !(*this == other); }
  /// The text form, e.g. `seq:p+2*H`.
  std::string str() const;
};

/// An `input NAME LEN` or `state NAME LEN` declaration.
struct VectorDecl {
  std::string name;
  DimExpr length;
  /// `input NAME LEN written` (Cell::withInputProducts): backward kernels
  /// store, not add, this input's gradient, so the runtime gives them
  /// zeroed scratch and adds it to the caller's array.
  bool gradientWritten = false;
};

/// `param NAME ROWS COLS` (a matrix) or `param NAME LEN` (a vector),
/// optionally followed by `init KIND [VALUE]`.
struct ParamDecl {
  std::string name;
  /// One entry (LEN) for a vector, two (ROWS, COLS) for a matrix.
  std::vector<DimExpr> shape;
  /// The cell's initialiser (`= 1`, `~ orthogonal`); none: the caller's
  /// fallback (Cell::initParams).
  InitScheme init;

  bool isMatrix() const { return shape.size() == 2; }
};

/// `buffer seq NAME LEN` ([T*B, LEN]) or `buffer step NAME LEN` ([B, LEN]),
/// optionally followed by `written`.
struct BufferDecl {
  /// Sequence (`seq`) or Step (`step`); schedule/PlanEnums.td.
  enum class Extent {
#define CELLRT_ENUM_CASE(name, value, text) name = value,
    CELLRT_PLAN_BUFFER_EXTENTS(CELLRT_ENUM_CASE)
#undef CELLRT_ENUM_CASE
  };

  Extent extent = Extent::Step;
  std::string name;
  DimExpr length;
  /// A gradient buffer whose every column the backward kernels store, each
  /// once per row (cell-store-sole-gradients): the runtime does not zero
  /// it, but for the rows of steps past the longest sequence.
  bool written = false;
};

/// `weight NAME P1 P2 ...`: the rows of matrix params stacked in order.
struct WeightDecl {
  std::string name;
  std::vector<std::string> params;
};

/// When an operation runs (schedule/PlanEnums.td lists them once):
/// - Pre: once per call over all T*B rows, before the time loop;
/// - Step: every time step over the B rows of that step;
/// - Scan: one kernel that runs all steps itself (time-scan) and replaces
///   the `step` operations; in training it writes every step's state into
///   the history (a plan with both, from before 2026-11-24, trains by
///   steps);
/// - BStep: backward, every step from T-1 down to 0, over its B rows;
/// - BPre: backward, once over all T*B rows, after the backward step loop;
/// - End: backward, `wgrad` and `pgrad`, at the very end.
enum class Phase {
#define CELLRT_ENUM_CASE(name, value, text) name = value,
  CELLRT_PLAN_PHASES(CELLRT_ENUM_CASE)
#undef CELLRT_ENUM_CASE
};

/// How many cases each enum has; their values are 0 to count - 1 (the
/// tables store them as bytes).
#define CELLRT_ENUM_COUNT(name, value, text) +1
inline constexpr int kNumPhases = 0 CELLRT_PLAN_PHASES(CELLRT_ENUM_COUNT);
inline constexpr int kNumRefKinds =
    0 CELLRT_PLAN_REF_KINDS(CELLRT_ENUM_COUNT);
inline constexpr int kNumBufferExtents =
    0 CELLRT_PLAN_BUFFER_EXTENTS(CELLRT_ENUM_COUNT);
#undef CELLRT_ENUM_COUNT

/// True for the phases of the backward pass.
inline bool isBackward(Phase phase) {
  return phase == Phase::BStep || phase == Phase::BPre || phase == Phase::End;
}

/// `pre|step|bpre|bstep gemm OUT WEIGHT IN`,
/// `pre|step|scan|bpre|bstep kernel K ARGS...`, `wgrad WEIGHT DY X` or
/// `pgrad PARAM REF` (the last two in Phase::End).
struct Operation {
  enum class Kind { Gemm, Kernel, Wgrad, Pgrad };

  Phase phase = Phase::Step;
  Kind kind = Kind::Kernel;
  /// Gemm, Wgrad: the stacked weight's name.
  std::string weight;
  /// Pgrad: the vector param's name.
  std::string param;
  /// Kernel: its index in the image's kernel table.
  int64_t kernel = -1;
  /// Gemm: {OUT, IN}. Kernel: its arguments in order. Wgrad: {DY, X}.
  /// Pgrad: {REF}.
  std::vector<Ref> operands;
  /// 1-based line of the plan text it came from (tests write plans as
  /// text); 0 otherwise. Errors name the line when there is one.
  int line = 0;

  const Ref &gemmOutput() const { return operands[0]; }
  const Ref &gemmInput() const { return operands[1]; }
  const Ref &wgradDy() const { return operands[0]; }
  const Ref &wgradX() const { return operands[1]; }
};

/// A parsed, validated plan. Every reference names a declaration of the right
/// kind and every dimension expression uses only the declared dims.
struct Plan {
  int version = 1;
  std::string cellName;
  /// `precision bf16` (cellc --precision bf16): the precision a Cell loaded
  /// from this plan multiplies in unless Cell::withPrecision says otherwise.
  Precision precision = Precision::F32;
  /// Symbolic dimensions, in the order of the kernels' `dims` array.
  std::vector<std::string> dims;
  std::vector<VectorDecl> inputs;
  std::vector<VectorDecl> states;
  std::vector<ParamDecl> params;
  /// The width of what the cell emits each step; step kernels write it
  /// through their `out` argument, followed by the probes.
  DimExpr outputWidth;
  /// `probe NAME LEN` (cellc --probe): values of the step the kernels write
  /// after the output in the `out` row; the runtime returns each in its own
  /// array (ForwardArgs::probes).
  std::vector<VectorDecl> probes;
  std::vector<BufferDecl> buffers;
  std::vector<WeightDecl> weights;
  /// All operations in execution order within each phase.
  std::vector<Operation> operations;
  /// `scratch K LEN...`: the row-local scratch kernel K needs, which the
  /// device passes after its arguments (Device::scratchPerRow).
  std::map<int64_t, std::vector<DimExpr>> scratch;

  const VectorDecl *findInput(const std::string &name) const;
  const VectorDecl *findState(const std::string &name) const;
  const ParamDecl *findParam(const std::string &name) const;
  const BufferDecl *findBuffer(const std::string &name) const;
  const WeightDecl *findWeight(const std::string &name) const;
  /// The position of a declaration in its list, or -1.
  int64_t inputIndex(const std::string &name) const;
  int64_t stateIndex(const std::string &name) const;
  int64_t paramIndex(const std::string &name) const;
  int64_t bufferIndex(const std::string &name) const;
  int64_t weightIndex(const std::string &name) const;

  /// The row width of the array a reference points into (ignoring its column
  /// offset): the LEN of its input/state/buffer, the COLS of a matrix param,
  /// the LEN of a vector param, kernelOutputWidth() for `out`; a gradient
  /// reference has the width of what it is the gradient of.
  DimExpr arrayWidth(const Ref &ref) const;
  /// The width of the kernels' `out` rows: the output's, then every
  /// probe's.
  DimExpr kernelOutputWidth() const;
  /// The number of rows of a stacked weight (sum of its params' ROWS).
  DimExpr weightRows(const WeightDecl &weight) const;
  /// The columns of a stacked weight (the COLS all its params share).
  DimExpr weightCols(const WeightDecl &weight) const;
  /// One past the largest kernel index the operations use.
  int64_t numKernelsUsed() const;
  /// True when the plan lists a backward pass (bstep, bpre, wgrad, pgrad).
  bool hasBackward() const;
};

/// Checks every rule of a plan (docs/plan-format.md): names are
/// identifiers declared once, dimension expressions use only the declared
/// dims, references name a declaration of the right kind, each phase uses
/// only the operands it may, products and gradients fit their arrays, and
/// some step or scan operation writes the output. This is the one place the
/// rules live: the decoder of the tables, the schedule's verifier and
/// Cell::withInputProducts all call it. Errors read `plan: message`, or
/// `plan operation 'TEXT': message` for an operation (locateOperation).
Status validatePlan(const Plan &plan);

/// Prints the canonical text of a plan, for people and for tests.
std::string printPlan(const Plan &plan);

/// One operation's line of the text form, e.g. `step gemm step:q W1 state:h`.
std::string printOperation(const Operation &op);

/// Where an error about `op` is: `plan line N` for a plan read from text,
/// else `plan operation 'TEXT'`.
std::string locateOperation(const Operation &op);

/// The text names of the enums (`pre`, `bstep`, `seq`, `dnext`, ...).
const char *phaseName(Phase phase);
const char *refKindName(Ref::Kind kind);
const char *bufferExtentName(BufferDecl::Extent extent);

} // namespace cellrt

#endif // CELLRT_PLAN_H
