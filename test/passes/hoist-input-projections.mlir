// RUN: cell-opt %s -split-input-file --pass-pipeline='builtin.module(cell.cell(cell-hoist-input-projections))' | FileCheck %s

// ATR: Wx @ x moves into the prologue; Wh @ h and the gates stay.
// CHECK-LABEL: cell.cell @atr
// CHECK:       prologue {
// CHECK-NEXT:  ^bb0(%[[X:.*]]: !cell.vec<"I">, %[[WX:.*]]: !cell.mat<"H", "I">, %{{.*}}: !cell.mat<"H", "H">):
// CHECK-NEXT:    %[[P:.*]] = cell.mat_vec %[[WX]], %[[X]]
// CHECK-NEXT:    cell.yield %[[P]] : !cell.vec<"H">
// CHECK:       body {
// CHECK-NEXT:  ^bb0(%{{.*}}: !cell.vec<"I">, %[[H:.*]]: !cell.vec<"H">, %{{.*}}: !cell.mat<"H", "I">, %[[WH:.*]]: !cell.mat<"H", "H">, %[[PH:.*]]: !cell.vec<"H">):
// CHECK-NEXT:    %[[Q:.*]] = cell.mat_vec %[[WH]], %[[H]]
// CHECK-NEXT:    cell.add %[[PH]], %[[Q]]
// CHECK-NOT:     cell.mat_vec
// CHECK:         cell.yield
cell.cell @atr attributes {input_names = ["x"], output_name = "h'", param_names = ["Wx", "Wh"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">, %Wx: !cell.mat<"H", "I">, %Wh: !cell.mat<"H", "H">):
  %p = cell.mat_vec %Wx, %x : !cell.mat<"H", "I">, !cell.vec<"I"> -> !cell.vec<"H">
  %q = cell.mat_vec %Wh, %h : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %s = cell.add %p, %q : !cell.vec<"H">
  %i = cell.sigmoid %s : !cell.vec<"H">
  %d = cell.sub %p, %q : !cell.vec<"H">
  %f = cell.sigmoid %d : !cell.vec<"H">
  %a = cell.mul %i, %p : !cell.vec<"H">
  %b = cell.mul %f, %h : !cell.vec<"H">
  %n = cell.add %a, %b : !cell.vec<"H">
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// SRU: every product is of x, so what stays is element-wise and
// cell-time-scan runs it as one kernel over all steps. Only the products
// move: the gates stay in that kernel instead of being written over all
// T*B rows for it to read back.
// CHECK-LABEL: cell.cell @sru
// CHECK:       prologue {
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    %[[XT:.*]] = cell.mat_vec
// CHECK-NEXT:    %[[FP:.*]] = cell.mat_vec
// CHECK-NEXT:    cell.yield %[[XT]], %[[FP]] : !cell.vec<"H">, !cell.vec<"H">
// CHECK:       body {
// CHECK-NEXT:  ^bb0(%{{.*}}: !cell.vec<"H">, %[[C:.*]]: !cell.vec<"H">, %{{.*}}, %{{.*}}, %[[BF:.*]]: !cell.vec<"H">, %[[XTH:.*]]: !cell.vec<"H">, %[[FPH:.*]]: !cell.vec<"H">):
// CHECK-NEXT:    %[[FB:.*]] = cell.add %[[FPH]], %[[BF]]
// CHECK-NEXT:    %[[F:.*]] = cell.sigmoid %[[FB]]
// CHECK-NOT:     cell.mat_vec
// CHECK:         cell.yield
cell.cell @sru attributes {input_names = ["x"], output_name = "c'", param_names = ["W", "Wf", "bf"], state_names = ["c"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %c: !cell.vec<"H">, %W: !cell.mat<"H", "H">, %Wf: !cell.mat<"H", "H">, %bf: !cell.vec<"H">):
  %xt = cell.mat_vec %W, %x : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %fp = cell.mat_vec %Wf, %x : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %fb = cell.add %fp, %bf : !cell.vec<"H">
  %f = cell.sigmoid %fb : !cell.vec<"H">
  %fc = cell.mul %f, %c : !cell.vec<"H">
  %one = cell.constant 1.0 : !cell.vec<"H">
  %g = cell.sub %one, %f : !cell.vec<"H">
  %u = cell.mul %g, %xt : !cell.vec<"H">
  %n = cell.add %fc, %u : !cell.vec<"H">
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// The same gates where a product reads the state: steps alternate with
// GEMMs, and the input-only gate work moves to the prologue, out of the
// recurrence, and the constant it uses is cloned, not moved.
// CHECK-LABEL: cell.cell @recurrent_sru
// CHECK:       prologue {
// CHECK:         cell.mat_vec
// CHECK:         cell.mat_vec
// CHECK:         %[[F:.*]] = cell.sigmoid
// CHECK:         %[[ONE:.*]] = cell.constant 1.0
// CHECK:         %[[G:.*]] = cell.sub %[[ONE]], %[[F]]
// CHECK:         %[[U:.*]] = cell.mul %[[G]]
// CHECK:         cell.yield %[[F]], %[[U]] : !cell.vec<"H">, !cell.vec<"H">
// CHECK:       body {
// CHECK:         cell.mat_vec
// CHECK-NOT:     cell.sigmoid
// CHECK:         cell.yield
cell.cell @recurrent_sru attributes {input_names = ["x"], output_name = "c'", param_names = ["W", "Wf", "bf", "U"], state_names = ["c"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %c: !cell.vec<"H">, %W: !cell.mat<"H", "H">, %Wf: !cell.mat<"H", "H">, %bf: !cell.vec<"H">, %U: !cell.mat<"H", "H">):
  %xt = cell.mat_vec %W, %x : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %fp = cell.mat_vec %Wf, %x : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %fb = cell.add %fp, %bf : !cell.vec<"H">
  %f = cell.sigmoid %fb : !cell.vec<"H">
  %uc = cell.mat_vec %U, %c : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %fc = cell.mul %f, %uc : !cell.vec<"H">
  %one = cell.constant 1.0 : !cell.vec<"H">
  %g = cell.sub %one, %f : !cell.vec<"H">
  %u = cell.mul %g, %xt : !cell.vec<"H">
  %n = cell.add %fc, %u : !cell.vec<"H">
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// A scan cell whose product reads element-wise input work: that work moves
// with the product; the rest stays.
// CHECK-LABEL: cell.cell @product_of_a_gate
// CHECK:       prologue {
// CHECK-NEXT:  ^bb0(
// CHECK-NEXT:    %[[T:.*]] = cell.tanh
// CHECK-NEXT:    %[[P:.*]] = cell.mat_vec %{{.*}}, %[[T]]
// CHECK-NEXT:    cell.yield %[[P]] : !cell.vec<"H">
// CHECK:       body {
// CHECK:         cell.sigmoid
// CHECK:         cell.yield
cell.cell @product_of_a_gate attributes {input_names = ["x"], output_name = "c'", param_names = ["W"], state_names = ["c"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %c: !cell.vec<"H">, %W: !cell.mat<"H", "H">):
  %t = cell.tanh %x : !cell.vec<"H">
  %p = cell.mat_vec %W, %t : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %s = cell.sigmoid %x : !cell.vec<"H">
  %a = cell.mul %s, %c : !cell.vec<"H">
  %n = cell.add %a, %p : !cell.vec<"H">
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// Does not apply: the input meets the state before any product, so nothing
// depends on inputs alone and no prologue is created.
// CHECK-LABEL: cell.cell @mixed
// CHECK:       prologue {
// CHECK-NEXT:  } body {
// CHECK:         cell.add
// CHECK:         cell.mat_vec
cell.cell @mixed attributes {input_names = ["x"], output_name = "h'", param_names = ["U"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %U: !cell.mat<"H", "H">):
  %s = cell.add %x, %h : !cell.vec<"H">
  %q = cell.mat_vec %U, %s : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  %n = cell.tanh %q : !cell.vec<"H">
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}
