// RUN: cell-opt %s --cell-lower-to-loops | FileCheck %s

// ATR's step kernel: one scf.parallel over rows; finished rows (step >=
// length) copy the state and zero the output; active rows evaluate the whole
// gate expression per element in ONE loop that stores the next state and the
// output.
// The fused op keeps the number of its kernel for the plan.
// CHECK:       cell.fused{{.*}}{final, kernel = 0 : i64}
// CHECK-LABEL: func.func @cellc_atr_k0(
// CHECK-SAME:    %[[BEGIN:.*]]: i64, %[[END:.*]]: i64, %[[STEP:.*]]: i64, %[[LENGTHS:.*]]: !llvm.ptr<i32>, %[[DIMS:.*]]: !llvm.ptr<i64>, %[[PTRS:.*]]: !llvm.ptr<ptr<f32>>, %[[STRIDES:.*]]: !llvm.ptr<i64>)
// CHECK:         scf.parallel (%[[ROW:.*]]) =
// CHECK:           %[[LEN:.*]] = llvm.sext
// CHECK:           %[[ACTIVE:.*]] = arith.cmpi slt, %[[STEP]], %[[LEN]] : i64
// CHECK:           scf.if %[[ACTIVE]] {
// CHECK:             scf.for
// CHECK-COUNT-2:       math.exp
// CHECK-COUNT-2:       llvm.store
// CHECK-NEXT:        }
// CHECK-NEXT:      } else {
// CHECK:             scf.for
// CHECK:               llvm.store
// CHECK:             scf.for
// CHECK:               arith.constant 0.0
// CHECK:               llvm.store
cell.cell @atr attributes {input_names = ["x"], output_name = "h'", param_names = ["Wx", "Wh"], state_names = ["h"]} prologue {
^bb0(%x: !cell.vec<"I">, %Wx: !cell.mat<"H", "I">, %Wh: !cell.mat<"H", "H">):
  %p = cell.mat_vec %Wx, %x : !cell.mat<"H", "I">, !cell.vec<"I"> -> !cell.vec<"H">
  cell.yield %p : !cell.vec<"H">
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">, %Wx: !cell.mat<"H", "I">, %Wh: !cell.mat<"H", "H">, %p: !cell.vec<"H">):
  %q = cell.mat_vec %Wh, %h : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %n:2 = cell.fused(%h, %p, %q) {final} : (!cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%hh: !cell.vec<"H">, %pp: !cell.vec<"H">, %qq: !cell.vec<"H">):
    %0 = cell.add %pp, %qq : !cell.vec<"H">
    %1 = cell.sigmoid %0 : !cell.vec<"H">
    %2 = cell.sub %pp, %qq : !cell.vec<"H">
    %3 = cell.sigmoid %2 : !cell.vec<"H">
    %4 = cell.mul %1, %pp : !cell.vec<"H">
    %5 = cell.mul %3, %hh : !cell.vec<"H">
    %6 = cell.add %4, %5 : !cell.vec<"H">
    cell.yield %6, %6 : !cell.vec<"H">, !cell.vec<"H">
  }
  cell.yield %n#0, %n#1 : !cell.vec<"H">, !cell.vec<"H">
}
