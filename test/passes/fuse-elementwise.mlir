// RUN: cell-opt %s -split-input-file --pass-pipeline='builtin.module(cell.cell(cell-fuse-elementwise))' | FileCheck %s

// GRU after hoisting and stacking: the reset gate and r*h form kernel 0,
// which must finish before the Uh product; the rest is the final kernel,
// which takes the state first and yields next state and output. Dead work
// (%xi, %sx) is dropped, not computed.
// CHECK-LABEL: cell.cell @gru
// CHECK:       body {
// CHECK-NEXT:  ^bb0(%{{[^:]*}}: !cell.vec<"I">, %[[H:[^:]*]]: !cell.vec<"H">
// CHECK-NEXT:    %[[HS:.*]]:2 = cell.stacked_mat_vec
// CHECK-NEXT:    %[[RH:.*]] = cell.fused(%[[HS]]#1, %[[H]]) : (!cell.vec<"H">, !cell.vec<"H">) -> !cell.vec<"H"> {
// CHECK:           cell.sigmoid
// CHECK:           cell.mul
// CHECK-NOT:       cell.tanh
// CHECK:           cell.yield
// CHECK:         %[[UH:.*]] = cell.mat_vec %{{.*}}, %[[RH]]
// CHECK-NEXT:    %[[N:.*]]:2 = cell.fused(%[[H]], {{.*}}%[[UH]]{{.*}}) {final}
// CHECK-NOT:       cell.add %{{.*}}, %{{.*}} : <"I">
// CHECK:           cell.tanh
// CHECK:           cell.constant 1.0
// CHECK:         cell.yield %[[N]]#0, %[[N]]#1
cell.cell @gru attributes {input_names = ["x"], output_name = "h'", param_names = ["Uz", "Ur", "Uh"], state_names = ["h"]} prologue {
^bb0(%x: !cell.vec<"I">, %Uz: !cell.mat<"H", "H">, %Ur: !cell.mat<"H", "H">, %Uh: !cell.mat<"H", "H">):
  cell.yield
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">, %Uz: !cell.mat<"H", "H">, %Ur: !cell.mat<"H", "H">, %Uh: !cell.mat<"H", "H">):
  %hs:2 = cell.stacked_mat_vec %Uz, %Ur(%h) : (!cell.mat<"H", "H">, !cell.mat<"H", "H">), !cell.vec<"H"> -> !cell.vec<"H">, !cell.vec<"H">
  %xi = cell.tanh %x : !cell.vec<"I">
  %sx = cell.add %x, %x : !cell.vec<"I">
  %zp = cell.add %hs#0, %h : !cell.vec<"H">
  %z = cell.sigmoid %zp : !cell.vec<"H">
  %r = cell.sigmoid %hs#1 : !cell.vec<"H">
  %rh = cell.mul %r, %h : !cell.vec<"H">
  %u = cell.mat_vec %Uh, %rh : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %c = cell.tanh %u : !cell.vec<"H">
  %one = cell.constant 1.0 : !cell.vec<"H">
  %nz = cell.sub %one, %z : !cell.vec<"H">
  %a = cell.mul %z, %h : !cell.vec<"H">
  %b = cell.mul %nz, %c : !cell.vec<"H">
  %n = cell.add %a, %b : !cell.vec<"H">
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// A state update that is a product result still gets a final kernel: it
// passes the value through so finished sequences are masked in one place.
// CHECK-LABEL: cell.cell @linear
// CHECK:         %[[Q:.*]] = cell.mat_vec
// CHECK-NEXT:    %[[N:.*]]:2 = cell.fused(%{{.*}}, %[[Q]]) {final}
// CHECK-NEXT:    ^bb0(%{{.*}}: !cell.vec<"H">, %[[A:.*]]: !cell.vec<"H">):
// CHECK-NEXT:      cell.yield %[[A]], %[[A]]
cell.cell @linear attributes {input_names = ["x"], output_name = "h'", param_names = ["U"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %U: !cell.mat<"H", "H">):
  %q = cell.mat_vec %U, %h : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  cell.yield %q, %q : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// A two-level step: the new state n' (kernel 0) feeds the product U @ n'
// and passes through the final kernel to the terminator. The product must
// read kernel 0's result, never the final kernel's (which comes after it).
// CHECK-LABEL: cell.cell @twolevel
// CHECK:       body {
// CHECK:         %[[M:.*]] = cell.mat_vec
// CHECK-NEXT:    %[[N:.*]] = cell.fused(%{{.*}}, %[[M]])
// CHECK:           cell.tanh
// CHECK:         %[[G:.*]] = cell.mat_vec %{{.*}}, %[[N]] :
// CHECK-NEXT:    %[[F:.*]]:3 = cell.fused(%{{.*}}, %{{.*}}, %[[G]], %[[N]]) {final}
// CHECK:         cell.yield %[[F]]#0, %[[F]]#1, %[[F]]#2
cell.cell @twolevel attributes {input_names = ["x"], output_name = "m'", param_names = ["W", "V", "U"], state_names = ["m", "n"]} prologue {
^bb0(%x: !cell.vec<"I">, %W: !cell.mat<"H", "I">, %V: !cell.mat<"H", "H">, %U: !cell.mat<"H", "H">):
  %wx = cell.mat_vec %W, %x : <"H", "I">, <"I"> -> <"H">
  cell.yield %wx : !cell.vec<"H">
} body {
^bb0(%x: !cell.vec<"I">, %m: !cell.vec<"H">, %n: !cell.vec<"H">, %W: !cell.mat<"H", "I">, %V: !cell.mat<"H", "H">, %U: !cell.mat<"H", "H">, %wx: !cell.vec<"H">):
  %vm = cell.mat_vec %V, %m : <"H", "H">, <"H"> -> <"H">
  %s = cell.add %wx, %vm : <"H">
  %nn = cell.tanh %s : <"H">
  %un = cell.mat_vec %U, %nn : <"H", "H">, <"H"> -> <"H">
  %g = cell.sigmoid %un : <"H">
  %gn = cell.mul %g, %nn : <"H">
  %one = cell.constant 1.000000e+00 : <"H">
  %ng = cell.sub %one, %g : <"H">
  %gm = cell.mul %ng, %m : <"H">
  %mm = cell.add %gn, %gm : <"H">
  cell.yield %mm, %nn, %mm : !cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">
}

// -----

// `output h` of a state that also feeds a product: the state passes through
// the final kernel as the output, and the product keeps reading the block
// argument itself.
// CHECK-LABEL: cell.cell @outputstate
// CHECK:       body {
// CHECK-NEXT:  ^bb0(%{{[^:]*}}: !cell.vec<"I">, %[[H:[^:]*]]: !cell.vec<"H">
// CHECK:         cell.mat_vec %{{.*}}, %[[H]] :
// CHECK:         %[[F:.*]]:2 = cell.fused(%[[H]], {{.*}}) {final}
// CHECK:         cell.yield %[[F]]#0, %[[F]]#1
cell.cell @outputstate attributes {input_names = ["x"], output_name = "h", param_names = ["W", "U"], state_names = ["h"]} prologue {
^bb0(%x: !cell.vec<"I">, %W: !cell.mat<"H", "I">, %U: !cell.mat<"H", "H">):
  %wx = cell.mat_vec %W, %x : <"H", "I">, <"I"> -> <"H">
  cell.yield %wx : !cell.vec<"H">
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">, %W: !cell.mat<"H", "I">, %U: !cell.mat<"H", "H">, %wx: !cell.vec<"H">):
  %uh = cell.mat_vec %U, %h : <"H", "H">, <"H"> -> <"H">
  %s = cell.add %wx, %uh : <"H">
  %n = cell.tanh %s : <"H">
  cell.yield %n, %h : !cell.vec<"H">, !cell.vec<"H">
}
