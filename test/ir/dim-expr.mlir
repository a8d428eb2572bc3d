// RUN: cell-opt %s | cell-opt | FileCheck %s
// RUN: cell-opt %s --mlir-print-op-generic | cell-opt | FileCheck %s

// Dimension text is canonicalised when it is parsed: types and attributes
// hold the expression, not the spelling, so they print canonically and
// equal lengths are equal types.
// CHECK-LABEL: func.func private @canonical(!cell.vec<"2*H">, !cell.mat<"3*H+I", "4">, !cell.vec<"I">)
func.func private @canonical(!cell.vec<"H+H">, !cell.mat<"I+3*H", "2+2">, !cell.vec<"2*I-I+H-H">)

// Spellings of one length verify as the same type (the concat's result and
// the state), and a slice's offset is an expression too.
// CHECK-LABEL: cell.cell @spellings
// CHECK:         ^bb0(%{{.*}}: !cell.vec<"H+I">, %{{.*}}: !cell.vec<"H+I">):
// CHECK:           cell.slice %{{.*}} {offset = #cell.dim<"0">} : <"H+I"> -> <"I">
// CHECK-NEXT:      cell.slice %{{.*}} {offset = #cell.dim<"I">} : <"H+I"> -> <"H">
// CHECK-NEXT:      %[[C:.*]] = cell.concat %{{.*}}, %{{.*}} : !cell.vec<"I">, !cell.vec<"H"> -> <"H+I">
// CHECK-NEXT:      cell.slice %[[C]] {offset = #cell.dim<"I">} : <"H+I"> -> <"H">
// CHECK-NEXT:      cell.slice %[[C]] {offset = #cell.dim<"0">} : <"H+I"> -> <"I">
cell.cell @spellings attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"I+H">, %h: !cell.vec<"H+I">):
  %n:2 = cell.fused(%h, %x) {final} : (!cell.vec<"H+I">, !cell.vec<"I+H">) -> (!cell.vec<"H+I">, !cell.vec<"H+I">) {
  ^bb0(%hh: !cell.vec<"H+I">, %xx: !cell.vec<"H+I">):
    %a = cell.slice %hh {offset = #cell.dim<"0">} : !cell.vec<"H+I"> -> !cell.vec<"I">
    %b = cell.slice %xx {offset = #cell.dim<"I+H-H">} : !cell.vec<"H+I"> -> !cell.vec<"H">
    %c = cell.concat %a, %b : !cell.vec<"I">, !cell.vec<"H"> -> !cell.vec<"I+H">
    %d = cell.slice %c {offset = #cell.dim<"I">} : !cell.vec<"H+I"> -> !cell.vec<"H">
    %e = cell.slice %c {offset = #cell.dim<"0*H">} : !cell.vec<"H+I"> -> !cell.vec<"I">
    %f = cell.concat %e, %d : !cell.vec<"I">, !cell.vec<"H"> -> !cell.vec<"H+I">
    cell.yield %f, %f : !cell.vec<"H+I">, !cell.vec<"H+I">
  }
  cell.yield %n#0, %n#1 : !cell.vec<"H+I">, !cell.vec<"H+I">
}
