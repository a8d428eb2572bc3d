// RUN: cell-opt %s -split-input-file --pass-pipeline='builtin.module(cell.cell(cell-derive-backward))' | FileCheck %s
// RUN: cell-opt %s -split-input-file --pass-pipeline='builtin.module(cell.cell(cell-derive-backward{save-activations=true}))' | FileCheck %s --check-prefix=SAVE

// With save-activations ATR's forward kernel also yields its two sigmoids;
// the backward kernel reads them (num_saved = 2) and computes no sigmoid.
// SAVE-LABEL: cell.cell @atr
// SAVE:         %[[F:.*]]:4 = cell.fused(%[[H:[^,]*]], %[[P:[^,]*]], %[[Q:[^)]*]]) {final}
// SAVE:           cell.yield %[[N:.*]], %[[N]], %{{.*}}, %{{.*}} : !cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">
// SAVE:         %[[DN:.*]] = cell.cotangent %[[F]]#0
// SAVE-NEXT:    %[[DO:.*]] = cell.cotangent %[[F]]#1
// SAVE-NEXT:    cell.fused(%[[H]], %[[P]], %[[Q]], %[[F]]#2, %[[F]]#3, %[[DN]], %[[DO]]) {backward, final, num_forward_operands = 3 : i64, num_saved = 2 : i64}
// SAVE-NOT:       cell.sigmoid
// SAVE:         cell.yield %[[F]]#0, %[[F]]#1

// ATR's fused step: the backward kernel follows it, takes the forward
// operands then the gradients of (next h, output), and returns the gradients
// of (h, p, q). The gradient of the doubly-yielded h' is the sum of both.
// sigmoid's derivative reuses the recomputed sigmoid: s * (1 - s).
// CHECK-LABEL: cell.cell @atr
// CHECK:         %[[F:.*]]:2 = cell.fused(%[[H:[^,]*]], %[[P:[^,]*]], %[[Q:[^)]*]]) {final}
// CHECK:         %[[DN:.*]] = cell.cotangent %[[F]]#0
// CHECK-NEXT:    %[[DO:.*]] = cell.cotangent %[[F]]#1
// CHECK-NEXT:    %[[G:.*]]:3 = cell.fused(%[[H]], %[[P]], %[[Q]], %[[DN]], %[[DO]]) {backward, final, num_forward_operands = 3 : i64}
// CHECK-NEXT:    ^bb0(%[[BH:[^:]*]]: !cell.vec<"H">, %[[BP:[^:]*]]: !cell.vec<"H">, %[[BQ:[^:]*]]: !cell.vec<"H">, %[[BDN:[^:]*]]: !cell.vec<"H">, %[[BDO:[^:]*]]: !cell.vec<"H">):
// CHECK:           %[[I:.*]] = cell.sigmoid
// CHECK:           %[[FG:.*]] = cell.sigmoid
// CHECK:           %[[DY:.*]] = cell.add %[[BDN]], %[[BDO]]
// CHECK:           %[[DH:.*]] = cell.mul %[[DY]], %[[FG]]
// CHECK:           %[[ONE:.*]] = cell.constant 1.0
// CHECK-NEXT:      %[[NF:.*]] = cell.sub %[[ONE]], %[[FG]]
// CHECK-NEXT:      cell.mul %[[FG]], %[[NF]]
// CHECK:           cell.yield %[[DH]], %{{.*}}, %{{.*}} : !cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">
// CHECK:         cell.yield %[[F]]#0, %[[F]]#1
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

// -----

// Whole-vector rules: split's gradient is the concat of its parts' (zeros
// for a part nothing used), layer_norm's is layer_norm_grad.
// CHECK-LABEL: cell.cell @normed
// CHECK:         cell.fused({{.*}}) {backward, num_forward_operands = 1 : i64}
// CHECK:           %[[Z:.*]] = cell.constant 0.0
// CHECK:           %[[C:.*]] = cell.concat %{{.*}}, %[[Z]] : !cell.vec<"H">, !cell.vec<"H"> -> <"2*H">
// CHECK:           %[[D:.*]] = cell.layer_norm_grad %{{.*}}, %[[C]] : <"2*H">
// CHECK:           cell.yield %[[D]] : !cell.vec<"2*H">
cell.cell @normed attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
^bb0(%x: !cell.vec<"2*H">):
  %a = cell.fused(%x) : (!cell.vec<"2*H">) -> !cell.vec<"H"> {
  ^bb0(%xx: !cell.vec<"2*H">):
    %n = cell.layer_norm %xx : !cell.vec<"2*H">
    %s:2 = cell.split %n : !cell.vec<"2*H"> -> !cell.vec<"H">, !cell.vec<"H">
    cell.yield %s#0 : !cell.vec<"H">
  }
  cell.yield %a : !cell.vec<"H">
} body {
^bb0(%x: !cell.vec<"2*H">, %h: !cell.vec<"H">, %a: !cell.vec<"H">):
  %n:2 = cell.fused(%h, %a) {final} : (!cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%hh: !cell.vec<"H">, %aa: !cell.vec<"H">):
    %0 = cell.add %hh, %aa : !cell.vec<"H">
    cell.yield %0, %0 : !cell.vec<"H">, !cell.vec<"H">
  }
  cell.yield %n#0, %n#1 : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// concat's gradient is a slice of the result's gradient per input, at the
// offset where that input starts.
// CHECK-LABEL: cell.cell @joined
// CHECK:         cell.fused({{.*}}) {backward, num_forward_operands = 2 : i64}
// CHECK:           %[[D:.*]] = cell.layer_norm_grad
// CHECK-NEXT:      %[[DX:.*]] = cell.slice %[[D]] {offset = #cell.dim<"0">} : <"H+I"> -> <"I">
// CHECK-NEXT:      %[[DY:.*]] = cell.slice %[[D]] {offset = #cell.dim<"I">} : <"H+I"> -> <"H">
// CHECK-NEXT:      cell.yield %[[DX]], %[[DY]] : !cell.vec<"I">, !cell.vec<"H">
cell.cell @joined attributes {input_names = ["x", "y"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
^bb0(%x: !cell.vec<"I">, %y: !cell.vec<"H">):
  %a = cell.fused(%x, %y) : (!cell.vec<"I">, !cell.vec<"H">) -> !cell.vec<"H+I"> {
  ^bb0(%xx: !cell.vec<"I">, %yy: !cell.vec<"H">):
    %c = cell.concat %xx, %yy : !cell.vec<"I">, !cell.vec<"H"> -> !cell.vec<"H+I">
    %n = cell.layer_norm %c : !cell.vec<"H+I">
    cell.yield %n : !cell.vec<"H+I">
  }
  cell.yield %a : !cell.vec<"H+I">
} body {
^bb0(%x: !cell.vec<"I">, %y: !cell.vec<"H">, %h: !cell.vec<"H+I">, %a: !cell.vec<"H+I">):
  %n:2 = cell.fused(%h, %a) {final} : (!cell.vec<"H+I">, !cell.vec<"H+I">) -> (!cell.vec<"H+I">, !cell.vec<"H+I">) {
  ^bb0(%hh: !cell.vec<"H+I">, %aa: !cell.vec<"H+I">):
    %0 = cell.add %hh, %aa : !cell.vec<"H+I">
    cell.yield %0, %0 : !cell.vec<"H+I">, !cell.vec<"H+I">
  }
  cell.yield %n#0, %n#1 : !cell.vec<"H+I">, !cell.vec<"H+I">
}

// -----

// Does not apply twice: a cell that already has its backward kernels keeps
// exactly one backward kernel per forward kernel.
// CHECK-LABEL: cell.cell @derived
// CHECK-COUNT-1: backward
// CHECK-NOT:     backward
cell.cell @derived attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  %n:2 = cell.fused(%h, %x) {final} : (!cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%hh: !cell.vec<"H">, %xx: !cell.vec<"H">):
    %0 = cell.add %hh, %xx : !cell.vec<"H">
    cell.yield %0, %0 : !cell.vec<"H">, !cell.vec<"H">
  }
  %d0 = cell.cotangent %n#0 : !cell.vec<"H">
  %d1 = cell.cotangent %n#1 : !cell.vec<"H">
  %g:2 = cell.fused(%h, %x, %d0, %d1) {backward, final, num_forward_operands = 2 : i64} : (!cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%a: !cell.vec<"H">, %b: !cell.vec<"H">, %c: !cell.vec<"H">, %d: !cell.vec<"H">):
    %s = cell.add %c, %d : !cell.vec<"H">
    cell.yield %s, %s : !cell.vec<"H">, !cell.vec<"H">
  }
  cell.yield %n#0, %n#1 : !cell.vec<"H">, !cell.vec<"H">
}
