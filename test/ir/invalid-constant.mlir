// RUN: cell-opt %s -split-input-file -verify-diagnostics
// The kernels compute in float32: a constant read as IR (cellc -x=mlir)
// must be a finite float32, as the front end's folded constants are
// (issue #43, item 11). These compiled into kernels that multiply by inf.

cell.cell @infinite attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{value must be a finite float32, got +inf}}
  %c = cell.constant 0x7FF0000000000000 : !cell.vec<"H">
  %y = cell.mul %x, %c : !cell.vec<"H">
  cell.yield %y, %y : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @nan attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{value must be a finite float32, got NaN}}
  %c = cell.constant 0xFFF8000000000000 : !cell.vec<"H">
  %y = cell.mul %x, %c : !cell.vec<"H">
  cell.yield %y, %y : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @beyond_float32 attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{value must be a finite float32, got -1e+39}}
  %c = cell.constant -1.0e+39 : !cell.vec<"H">
  %y = cell.mul %x, %c : !cell.vec<"H">
  cell.yield %y, %y : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// The largest float32 is a constant.
cell.cell @largest attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  %c = cell.constant 3.4028234663852886e+38 : !cell.vec<"H">
  %y = cell.mul %x, %c : !cell.vec<"H">
  cell.yield %y, %y : !cell.vec<"H">, !cell.vec<"H">
}
