// RUN: cell-opt %s -split-input-file --pass-pipeline='builtin.module(cell.cell(cell-time-scan))' | FileCheck %s
// RUN: cell-opt %s -split-input-file --pass-pipeline='builtin.module(cell.cell(cell-time-scan),cell-lower-to-loops)' | FileCheck %s --check-prefix=LOWERED

// SRU after hoisting and fusion: no product is left in the body, so the
// final kernel is marked to run all steps itself.
// CHECK-LABEL: cell.cell @sru
// CHECK:         cell.fused({{.*}}) {final, scan}
// The scan form is the op's only kernel, in training too. Where a state
// advances per step (training binds it to its history) the steps read and
// write it in place; where it does not (inference) they run in row-local
// scratch, copied in first and out once at the end. The kernel loops over
// steps up to each row's length inside the row loop, then zeroes the
// outputs of the padded steps and, in training, carries the state.
// Strides: 5 row strides (c, f, u, next c, out), then 5 step advances;
// next c's advance is stride 8.
// LOWERED-LABEL: func.func @cellc_sru_k0(
// LOWERED:         %[[AT:.*]] = llvm.getelementptr %arg6[%c8_i64]
// LOWERED-NEXT:    %[[ADVANCE:.*]] = llvm.load %[[AT]]
// LOWERED:         scf.parallel
// LOWERED:           %[[IN_PLACE:.*]] = arith.cmpi ne, %[[ADVANCE]], %{{.*}} : i64
// LOWERED:           %[[IN_SCRATCH:.*]] = arith.cmpi eq, %[[ADVANCE]], %{{.*}} : i64
// LOWERED:           scf.if %[[IN_SCRATCH]] {
// LOWERED:           scf.for %{{.*}} = %{{.*}} to %[[LEN:.*]] step
// LOWERED:             llvm.select %[[IN_PLACE]]
// LOWERED:             llvm.select %[[IN_PLACE]]
// LOWERED:             scf.for
// LOWERED:               math.tanh
// LOWERED:             scf.if %[[IN_SCRATCH]] {
// LOWERED:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// LOWERED:             arith.constant 0.0
// LOWERED:             scf.if %[[IN_PLACE]] {
// LOWERED:           scf.if %[[IN_SCRATCH]] {
// LOWERED-NOT:   func.func @cellc_sru_k1(
cell.cell @sru attributes {input_names = ["x"], output_name = "h", param_names = [], state_names = ["c"]} prologue {
^bb0(%x: !cell.vec<"H">):
  cell.yield %x, %x : !cell.vec<"H">, !cell.vec<"H">
} body {
^bb0(%x: !cell.vec<"H">, %c: !cell.vec<"H">, %f: !cell.vec<"H">, %u: !cell.vec<"H">):
  %n:2 = cell.fused(%c, %f, %u) {final} : (!cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%cc: !cell.vec<"H">, %ff: !cell.vec<"H">, %uu: !cell.vec<"H">):
    %0 = cell.mul %ff, %cc : !cell.vec<"H">
    %1 = cell.add %0, %uu : !cell.vec<"H">
    %2 = cell.tanh %1 : !cell.vec<"H">
    cell.yield %1, %2 : !cell.vec<"H">, !cell.vec<"H">
  }
  cell.yield %n#0, %n#1 : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// Does not apply: a product reads the state, so steps must alternate
// between GEMMs and kernels.
// CHECK-LABEL: cell.cell @rnn
// CHECK-NOT:     scan
cell.cell @rnn attributes {input_names = ["x"], output_name = "h'", param_names = ["U"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %U: !cell.mat<"H", "H">):
  %q = cell.mat_vec %U, %h : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %n:2 = cell.fused(%h, %q, %x) {final} : (!cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%hh: !cell.vec<"H">, %qq: !cell.vec<"H">, %xx: !cell.vec<"H">):
    %0 = cell.add %qq, %xx : !cell.vec<"H">
    %1 = cell.tanh %0 : !cell.vec<"H">
    cell.yield %1, %1 : !cell.vec<"H">, !cell.vec<"H">
  }
  cell.yield %n#0, %n#1 : !cell.vec<"H">, !cell.vec<"H">
}
