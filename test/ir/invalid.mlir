// RUN: cell-opt %s -split-input-file -verify-diagnostics

cell.cell @product_columns attributes {input_names = ["x"], output_name = "h'", param_names = ["W"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">, %W: !cell.mat<"H", "H">):
  // expected-error @+1 {{matrix columns H do not match the vector length I}}
  %p = cell.mat_vec %W, %x : !cell.mat<"H", "H">, !cell.vec<"I"> -> !cell.vec<"H">
  cell.yield %p, %p : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @product_rows attributes {input_names = ["x"], output_name = "h'", param_names = ["W"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">, %W: !cell.mat<"H", "I">):
  // expected-error @+1 {{result length 2*H does not match the matrix rows H}}
  %p = cell.mat_vec %W, %x : !cell.mat<"H", "I">, !cell.vec<"I"> -> !cell.vec<"2*H">
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// expected-error @+1 {{yield has 1 values but needs 2 (the next states, then the output)}}
cell.cell @yield_count attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  cell.yield %h : !cell.vec<"H">
}

// -----

// expected-error @+1 {{next value of a state has type '!cell.vec<"I">' but the state is '!cell.vec<"H">'}}
cell.cell @state_type attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">):
  cell.yield %x, %x : !cell.vec<"I">, !cell.vec<"I">
}

// -----

cell.cell @split_parts attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"3*H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{input length 3*H is not 2 times the part length H}}
  %p:2 = cell.split %x : !cell.vec<"3*H"> -> !cell.vec<"H">, !cell.vec<"H">
  cell.yield %p#0, %p#1 : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @concat_length attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">):
  // expected-error @+1 {{result length 2*H is not the sum of the input lengths H+I}}
  %c = cell.concat %x, %h : !cell.vec<"I">, !cell.vec<"H"> -> !cell.vec<"2*H">
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @stack_count attributes {input_names = ["x"], output_name = "h'", param_names = ["A"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">, %A: !cell.mat<"H", "I">):
  // expected-error @+1 {{stacks fewer than two products}}
  %s = cell.stacked_mat_vec %A(%x) : (!cell.mat<"H", "I">), !cell.vec<"I"> -> !cell.vec<"H">
  cell.yield %s, %s : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// expected-error @+1 {{dimension 'H+H' is not in canonical form '2*H'}}
func.func private @bad_dim(!cell.vec<"H+H">) -> ()

// -----

// expected-error @+1 {{malformed dimension 'H*'}}
func.func private @malformed(!cell.vec<"H*">) -> ()
