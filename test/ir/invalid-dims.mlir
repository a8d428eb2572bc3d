// RUN: cell-opt %s -split-input-file -verify-diagnostics
// RUN: not cellc -x=mlir %s -o %t.o 2>&1 | FileCheck %s --check-prefix=CELLC
// A vector or matrix type's dimension holds at least one element for every
// size of its symbols (each at least 1) and at most 2^31 - 1 when every
// symbol is 1, as the front end requires of declared dimensions
// (docs/cell-language.md, "Limits"). IR read with `cellc -x=mlir` compiled
// "-H", "1-H" and "99999999999", and "0" gave an internal compiler error
// (issue #43, item 12).

// CELLC-NOT: cellc bug
// CELLC: invalid-dims.mlir:[[@LINE+4]]:19: error: dimension '-H' is not positive
// CELLC-NEXT: {{^}}^bb0(%x: !cell.vec<"-H">, %h: !cell.vec<"-H">):{{$}}
cell.cell @negative attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"-H">, %h: !cell.vec<"-H">):
  cell.yield %x, %x : !cell.vec<"-H">, !cell.vec<"-H">
}
// expected-error @-3 {{dimension '-H' is not positive}}

// -----

cell.cell @one_minus attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
// expected-error @+1 {{dimension '-H+1' is not positive for every size of its symbol}}
^bb0(%x: !cell.vec<"1-H">, %h: !cell.vec<"1-H">):
  cell.yield %x, %x : !cell.vec<"1-H">, !cell.vec<"1-H">
}

// -----

cell.cell @zero_at_one attributes {input_names = ["x"], output_name = "h'", param_names = ["W"], state_names = ["h"]} prologue {
} body {
// expected-error @+1 {{dimension 'H-1' is not positive for every size of its symbol}}
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %W: !cell.mat<"H-1", "H">):
  cell.yield %x, %x : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @too_large attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
// expected-error @+1 {{dimension '99999999999' is too large: a dimension has at most 2147483647 elements}}
^bb0(%x: !cell.vec<"99999999999">, %h: !cell.vec<"99999999999">):
  cell.yield %x, %x : !cell.vec<"99999999999">, !cell.vec<"99999999999">
}

// -----

cell.cell @too_large_at_ones attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
// expected-error @+1 {{dimension '3000000000*H' is too large: a dimension has at most 2147483647 elements}}
^bb0(%x: !cell.vec<"3000000000*H">, %h: !cell.vec<"3000000000*H">):
  cell.yield %x, %x : !cell.vec<"3000000000*H">, !cell.vec<"3000000000*H">
}

// -----

cell.cell @zero attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
// expected-error @+1 {{dimension '0' is not positive}}
^bb0(%x: !cell.vec<"0">, %h: !cell.vec<"0">):
  cell.yield %x, %x : !cell.vec<"0">, !cell.vec<"0">
}

// -----

cell.cell @zero_difference attributes {input_names = ["x"], output_name = "h'", param_names = ["W"], state_names = ["h"]} prologue {
} body {
// expected-error @+1 {{dimension '0' is not positive}}
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %W: !cell.mat<"H", "H-H">):
  cell.yield %x, %x : !cell.vec<"H">, !cell.vec<"H">
}
