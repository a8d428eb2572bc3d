// RUN: cell-opt %s -split-input-file -verify-diagnostics
// Param initialisers (`param_inits`) name params and suit their rank; the
// numbers follow the runtime's rules (cellrt/InitScheme.h).

// expected-error @+1 {{has an initialiser for 'Q', which is not a param}}
cell.cell @unknown_param attributes {input_names = ["x"], output_name = "h'", param_inits = {Q = #cell.init<orthogonal>}, param_names = ["b"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %b: !cell.vec<"H">):
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// expected-error @+1 {{param 'b': 'orthogonal' needs a matrix param [R, C], not a vector}}
cell.cell @orthogonal_vector attributes {input_names = ["x"], output_name = "h'", param_inits = {b = #cell.init<orthogonal>}, param_names = ["b"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %b: !cell.vec<"H">):
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// expected-error @+1 {{the initialiser of param 'b' must be a #cell.init, got 1 : i64}}
cell.cell @not_an_init attributes {input_names = ["x"], output_name = "h'", param_inits = {b = 1}, param_names = ["b"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %b: !cell.vec<"H">):
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// expected-error @+1 {{the bound of 'uniform' must be positive, got -1}}
cell.cell @negative_bound attributes {input_names = ["x"], output_name = "h'", param_inits = {b = #cell.init<uniform -1.0>}, param_names = ["b"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %b: !cell.vec<"H">):
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// expected-error @+1 {{the value of 'constant' is not a finite float32: 1e+39}}
cell.cell @huge_constant attributes {input_names = ["x"], output_name = "h'", param_inits = {b = #cell.init<constant 1.0e39>}, param_names = ["b"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %b: !cell.vec<"H">):
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// expected-error @+2 {{unknown initialiser 'none'; expected constant, uniform, normal, orthogonal, fan_in or fan_out}}
// expected-error @+1 {{failed to parse Cell_InitAttr parameter 'scheme'}}
cell.cell @none attributes {input_names = ["x"], output_name = "h'", param_inits = {b = #cell.init<none>}, param_names = ["b"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %b: !cell.vec<"H">):
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// expected-error @+1 {{expected '>'}}
cell.cell @argument_to_orthogonal attributes {input_names = ["x"], output_name = "h'", param_inits = {W = #cell.init<orthogonal 1.0>}, param_names = ["W"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %W: !cell.mat<"H", "H">):
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}
