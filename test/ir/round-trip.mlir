// RUN: cell-opt %s | cell-opt | FileCheck %s
// RUN: cell-opt %s --mlir-print-op-generic | cell-opt | FileCheck %s

// Every op of the dialect prints in a form that parses back to itself.
// CHECK-LABEL: cell.cell @everything
// CHECK:         %[[S:.*]]:2 = cell.stacked_mat_vec %{{.*}}, %{{.*}}(%{{.*}}) : (!cell.mat<"H", "I">, !cell.mat<"H", "I">), <"I"> -> !cell.vec<"H">, !cell.vec<"H">
// CHECK:         cell.mat_vec %{{.*}}, %{{.*}} : <"2*H", "H">, <"H"> -> <"2*H">
// CHECK:         cell.constant 5.000000e-01 : <"H">
// CHECK:         cell.add
// CHECK:         cell.sub
// CHECK:         cell.mul
// CHECK:         cell.div
// CHECK:         cell.neg
// CHECK:         cell.sigmoid
// CHECK:         cell.tanh
// CHECK:         cell.relu
// CHECK:         cell.exp
// CHECK:         cell.log
// CHECK:         cell.softplus
// CHECK:         cell.layer_norm %{{.*}} : <"2*H">
// CHECK:         %[[P:.*]]:2 = cell.split %{{.*}} : <"2*H"> -> !cell.vec<"H">, !cell.vec<"H">
// CHECK:         cell.concat %[[P]]#0, %[[P]]#1 : !cell.vec<"H">, !cell.vec<"H"> -> <"2*H">
// CHECK:         cell.fused(%{{.*}}, %{{.*}}) {final} : (!cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
// CHECK:         cell.yield
cell.cell @everything attributes {input_names = ["x"], output_name = "h'", param_names = ["A", "B", "C"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">, %A: !cell.mat<"H", "I">, %B: !cell.mat<"H", "I">, %C: !cell.mat<"2*H", "H">):
  %s:2 = cell.stacked_mat_vec %A, %B(%x) : (!cell.mat<"H", "I">, !cell.mat<"H", "I">), !cell.vec<"I"> -> !cell.vec<"H">, !cell.vec<"H">
  %w = cell.mat_vec %C, %h : !cell.mat<"2*H", "H">, !cell.vec<"H"> -> !cell.vec<"2*H">
  %c = cell.constant 0.5 : !cell.vec<"H">
  %0 = cell.add %s#0, %c : !cell.vec<"H">
  %1 = cell.sub %0, %s#1 : !cell.vec<"H">
  %2 = cell.mul %1, %h : !cell.vec<"H">
  %3 = cell.div %2, %c : !cell.vec<"H">
  %4 = cell.neg %3 : !cell.vec<"H">
  %5 = cell.sigmoid %4 : !cell.vec<"H">
  %6 = cell.tanh %5 : !cell.vec<"H">
  %7 = cell.relu %6 : !cell.vec<"H">
  %8 = cell.exp %7 : !cell.vec<"H">
  %9 = cell.log %8 : !cell.vec<"H">
  %10 = cell.softplus %9 : !cell.vec<"H">
  %n = cell.layer_norm %w : !cell.vec<"2*H">
  %p:2 = cell.split %n : !cell.vec<"2*H"> -> !cell.vec<"H">, !cell.vec<"H">
  %j = cell.concat %p#0, %p#1 : !cell.vec<"H">, !cell.vec<"H"> -> !cell.vec<"2*H">
  %k:2 = cell.split %j : !cell.vec<"2*H"> -> !cell.vec<"H">, !cell.vec<"H">
  %11 = cell.add %10, %k#1 : !cell.vec<"H">
  %f:2 = cell.fused(%h, %11) {final} : (!cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%a: !cell.vec<"H">, %b: !cell.vec<"H">):
    cell.yield %b, %b : !cell.vec<"H">, !cell.vec<"H">
  }
  cell.yield %f#0, %f#1 : !cell.vec<"H">, !cell.vec<"H">
}

// Every mark passes and codegen leave on kernels, well-formed: the final
// forward kernel that also scans (saving one activation), and its backward
// twin that reads the saved value and the results' gradients.
// CHECK-LABEL: cell.cell @marked
// CHECK:         %[[F:.*]]:3 = cell.fused(%{{.*}}, %{{.*}}) {final, kernel = 0 : i64, scan} : (!cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">) {
// CHECK:         %[[DN:.*]] = cell.cotangent %[[F]]#0 : <"H">
// CHECK:         %[[DO:.*]] = cell.cotangent %[[F]]#1 : <"H">
// CHECK:         cell.fused(%{{.*}}, %{{.*}}, %[[F]]#2, %[[DN]], %[[DO]]) {backward, final, kernel = 1 : i64, num_forward_operands = 2 : i64, num_saved = 1 : i64}
// CHECK:           cell.slice %{{.*}} {offset = #cell.dim<"H">} : <"2*H"> -> <"H">
cell.cell @marked attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  %n:3 = cell.fused(%h, %x) {final, kernel = 0, scan} : (!cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%hh: !cell.vec<"H">, %xx: !cell.vec<"H">):
    %s = cell.sigmoid %xx : !cell.vec<"H">
    %0 = cell.mul %hh, %s : !cell.vec<"H">
    cell.yield %0, %0, %s : !cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">
  }
  %dn = cell.cotangent %n#0 : !cell.vec<"H">
  %do = cell.cotangent %n#1 : !cell.vec<"H">
  %g:2 = cell.fused(%h, %x, %n#2, %dn, %do) {backward, final, kernel = 1, num_forward_operands = 2, num_saved = 1} : (!cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%hh: !cell.vec<"H">, %xx: !cell.vec<"H">, %s: !cell.vec<"H">, %a: !cell.vec<"H">, %b: !cell.vec<"H">):
    %d = cell.add %a, %b : !cell.vec<"H">
    %both = cell.concat %d, %s : !cell.vec<"H">, !cell.vec<"H"> -> !cell.vec<"2*H">
    %ds = cell.slice %both {offset = #cell.dim<"H">} : !cell.vec<"2*H"> -> !cell.vec<"H">
    %dh = cell.mul %d, %ds : !cell.vec<"H">
    cell.yield %dh, %d : !cell.vec<"H">, !cell.vec<"H">
  }
  cell.yield %n#0, %n#1 : !cell.vec<"H">, !cell.vec<"H">
}
