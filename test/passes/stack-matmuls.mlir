// RUN: cell-opt %s -split-input-file --pass-pipeline='builtin.module(cell.cell(cell-stack-matmuls))' | FileCheck %s

// GRU: the three products of x become one, the two of h another; Uh @ (r*h)
// reads this step's reset gate and must stay a product of its own.
// CHECK-LABEL: cell.cell @gru
// CHECK:       ^bb0(%[[X:[^:]*]]: !cell.vec<"I">, %[[H:[^:]*]]: !cell.vec<"H">, %[[WZ:[^:]*]]: !cell.mat<"H", "I">, %[[WR:[^:]*]]: !cell.mat<"H", "I">, %[[WH:[^:]*]]: !cell.mat<"H", "I">, %[[UZ:[^:]*]]: !cell.mat<"H", "H">, %[[UR:[^:]*]]: !cell.mat<"H", "H">, %[[UH:[^:]*]]: !cell.mat<"H", "H">):
// CHECK-NEXT:    %[[XS:.*]]:3 = cell.stacked_mat_vec %[[WZ]], %[[WR]], %[[WH]](%[[X]])
// CHECK-NEXT:    %[[HS:.*]]:2 = cell.stacked_mat_vec %[[UZ]], %[[UR]](%[[H]])
// CHECK-NEXT:    %[[Z:.*]] = cell.add %[[XS]]#0, %[[HS]]#0
// CHECK:         %[[R:.*]] = cell.add %[[XS]]#1, %[[HS]]#1
// CHECK:         %[[RH:.*]] = cell.mul %{{.*}}, %[[H]]
// CHECK-NEXT:    cell.mat_vec %[[UH]], %[[RH]]
// CHECK-NOT:     cell.stacked_mat_vec
cell.cell @gru attributes {input_names = ["x"], output_name = "h'", param_names = ["Wz", "Wr", "Wh", "Uz", "Ur", "Uh"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">, %Wz: !cell.mat<"H", "I">, %Wr: !cell.mat<"H", "I">, %Wh: !cell.mat<"H", "I">, %Uz: !cell.mat<"H", "H">, %Ur: !cell.mat<"H", "H">, %Uh: !cell.mat<"H", "H">):
  %0 = cell.mat_vec %Wz, %x : !cell.mat<"H", "I">, !cell.vec<"I"> -> !cell.vec<"H">
  %1 = cell.mat_vec %Uz, %h : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %2 = cell.add %0, %1 : !cell.vec<"H">
  %z = cell.sigmoid %2 : !cell.vec<"H">
  %3 = cell.mat_vec %Wr, %x : !cell.mat<"H", "I">, !cell.vec<"I"> -> !cell.vec<"H">
  %4 = cell.mat_vec %Ur, %h : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %5 = cell.add %3, %4 : !cell.vec<"H">
  %r = cell.sigmoid %5 : !cell.vec<"H">
  %6 = cell.mat_vec %Wh, %x : !cell.mat<"H", "I">, !cell.vec<"I"> -> !cell.vec<"H">
  %rh = cell.mul %r, %h : !cell.vec<"H">
  %7 = cell.mat_vec %Uh, %rh : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %8 = cell.add %6, %7 : !cell.vec<"H">
  %c = cell.tanh %8 : !cell.vec<"H">
  %one = cell.constant 1.0 : !cell.vec<"H">
  %nz = cell.sub %one, %z : !cell.vec<"H">
  %a = cell.mul %z, %h : !cell.vec<"H">
  %b = cell.mul %nz, %c : !cell.vec<"H">
  %n = cell.add %a, %b : !cell.vec<"H">
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// Does not apply: ATR's two products read different vectors.
// CHECK-LABEL: cell.cell @atr
// CHECK-NOT:   cell.stacked_mat_vec
// CHECK:       cell.mat_vec
// CHECK:       cell.mat_vec
// CHECK-NOT:   cell.stacked_mat_vec
cell.cell @atr attributes {input_names = ["x"], output_name = "h'", param_names = ["Wx", "Wh"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">, %Wx: !cell.mat<"H", "I">, %Wh: !cell.mat<"H", "H">):
  %p = cell.mat_vec %Wx, %x : !cell.mat<"H", "I">, !cell.vec<"I"> -> !cell.vec<"H">
  %q = cell.mat_vec %Wh, %h : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %n = cell.add %p, %q : !cell.vec<"H">
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}
