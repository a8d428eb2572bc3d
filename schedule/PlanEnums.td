//===- PlanEnums.td - The plan's enums, listed once ----------*- tablegen -*-===//
//
// Phases, reference kinds and buffer extents: the sched dialect's enums and,
// through cmake/plan_enums.py (llvm-tblgen --dump-json), the runtime's
// (cellrt/PlanEnums.inc, expanded in cellrt/Plan.h). The values are what the
// plan's tables store: append new cases, never renumber.
//
//===----------------------------------------------------------------------===//

#ifndef SCHED_PLAN_ENUMS
#define SCHED_PLAN_ENUMS

include "mlir/IR/EnumAttr.td"

def Sched_Phase : I32EnumAttr<"Phase", "when an operation runs", [
  I32EnumAttrCase<"Pre", 0, "pre">,
  I32EnumAttrCase<"Step", 1, "step">,
  I32EnumAttrCase<"Scan", 2, "scan">,
  I32EnumAttrCase<"BStep", 3, "bstep">,
  I32EnumAttrCase<"BPre", 4, "bpre">,
  I32EnumAttrCase<"End", 5, "end">]> {
  let cppNamespace = "::mlir::sched";
}

def Sched_Extent : I32EnumAttr<"Extent", "the rows a buffer holds", [
  I32EnumAttrCase<"Sequence", 0, "seq">,
  I32EnumAttrCase<"Step", 1, "step">]> {
  let cppNamespace = "::mlir::sched";
}

def Sched_RefKind : I32EnumAttr<"RefKind", "what a reference points into", [
  I32EnumAttrCase<"Input", 0, "input">,
  I32EnumAttrCase<"State", 1, "state">,
  I32EnumAttrCase<"Next", 2, "next">,
  I32EnumAttrCase<"Param", 3, "param">,
  I32EnumAttrCase<"Seq", 4, "seq">,
  I32EnumAttrCase<"Step", 5, "step">,
  I32EnumAttrCase<"Out", 6, "out">,
  I32EnumAttrCase<"Dnext", 7, "dnext">,
  I32EnumAttrCase<"Dstate", 8, "dstate">,
  I32EnumAttrCase<"Dout", 9, "dout">,
  I32EnumAttrCase<"Dinput", 10, "dinput">]> {
  let cppNamespace = "::mlir::sched";
  let genSpecializedAttr = 0;
}

#endif // SCHED_PLAN_ENUMS
