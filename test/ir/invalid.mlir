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

// Malformed dimension text is an error where it is written; the type
// parser then says which parameter it was reading.
// expected-error @+2 {{malformed dimension 'H*'}}
// expected-error @+1 {{failed to parse Cell_VecType parameter 'length'}}
func.func private @malformed(!cell.vec<"H*">) -> ()

// -----

// expected-error @+2 {{malformed dimension '3*'}}
// expected-error @+1 {{failed to parse Cell_DimExprAttr parameter 'value'}}
func.func private @malformed_attr() attributes {offset = #cell.dim<"3*">}

// -----

// Lengths compare as expressions: "H+H" is a fine spelling of 2*H, which is
// still not the 3*H the inputs add up to.
cell.cell @spelled_length attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{result length 2*H is not the sum of the input lengths 3*H}}
  %c = cell.concat %x, %h, %h : !cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H"> -> !cell.vec<"H+H">
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// Kernel marks: only backward kernels count their forward operands.
cell.cell @forward_count_without_backward attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op has num_forward_operands but is not a backward kernel}}
  %n = cell.fused(%h) {final, num_forward_operands = 1} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @saved_without_backward attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op has num_saved but is not a backward kernel}}
  %n = cell.fused(%h) {final, num_saved = 1} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @backward_without_count attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op is a backward kernel without num_forward_operands}}
  %g = cell.fused(%x) {backward} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @forward_count_too_large attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op has num_forward_operands = 2 but only 1 operands}}
  %g = cell.fused(%x) {backward, num_forward_operands = 2} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @saved_too_many attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op has num_forward_operands + num_saved = 2 but only 1 operands}}
  %g = cell.fused(%x) {backward, num_forward_operands = 1, num_saved = 1} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// A backward kernel returns one gradient per forward operand.
cell.cell @backward_results attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op results must be the gradients of the 2 forward operands, with their types}}
  %g = cell.fused(%x, %h) {backward, num_forward_operands = 2} : (!cell.vec<"H">, !cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">, %b: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// What follows the forward operands and saved activations are gradients.
cell.cell @backward_gradients attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op operands after the forward operands and saved activations must be cell.cotangent}}
  %g = cell.fused(%x, %h) {backward, num_forward_operands = 1} : (!cell.vec<"H">, !cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">, %b: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// Only the final forward kernel runs all steps.
cell.cell @scan_not_final attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op is a scan kernel but not the final forward kernel}}
  %g = cell.fused(%h) {scan} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @scan_backward attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  %d = cell.cotangent %h : !cell.vec<"H">
  // expected-error @+1 {{'cell.fused' op is a scan kernel but not the final forward kernel}}
  %g = cell.fused(%x, %d) {backward, final, num_forward_operands = 1, scan} : (!cell.vec<"H">, !cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">, %b: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// Counts and indices are not negative.
cell.cell @negative_index attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op attribute 'kernel' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %n = cell.fused(%h) {final, kernel = -1} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @negative_count attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op attribute 'num_saved' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %g = cell.fused(%x) {backward, num_forward_operands = 1, num_saved = -1} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// Marks are unit attributes.
cell.cell @unit_mark attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op attribute 'final' failed to satisfy constraint: unit attribute}}
  %n = cell.fused(%h) {final = 1} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// Kernel marks across a cell: one final forward kernel, in the body.
cell.cell @final_in_prologue attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
^bb0(%x: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op is final but in the prologue}}
  %a = cell.fused(%x) {final} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%xx: !cell.vec<"H">):
    cell.yield %xx : !cell.vec<"H">
  }
  cell.yield %a : !cell.vec<"H">
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %a: !cell.vec<"H">):
  cell.yield %a, %a : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @two_final attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  %m:2 = cell.fused(%h) {final} : (!cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a, %a : !cell.vec<"H">, !cell.vec<"H">
  }
  // expected-error @+1 {{'cell.fused' op is a second final forward kernel}}
  %n = cell.fused(%h) {final} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %m#0, %m#1 : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// The final kernel takes the states first: finished rows copy them.
cell.cell @final_operands attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op is final but does not take the 1 states as its first operands}}
  %n:2 = cell.fused(%x, %h) {final} : (!cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%a: !cell.vec<"H">, %b: !cell.vec<"H">):
    cell.yield %a, %b : !cell.vec<"H">, !cell.vec<"H">
  }
  cell.yield %n#0, %n#1 : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// Its results are the next states and the output, which the body yields.
cell.cell @final_results attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op is final but the body does not yield its first 2 results}}
  %n:2 = cell.fused(%h, %x) {final} : (!cell.vec<"H">, !cell.vec<"H">) -> (!cell.vec<"H">, !cell.vec<"H">) {
  ^bb0(%a: !cell.vec<"H">, %b: !cell.vec<"H">):
    cell.yield %a, %b : !cell.vec<"H">, !cell.vec<"H">
  }
  cell.yield %n#1, %n#0 : !cell.vec<"H">, !cell.vec<"H">
}

// -----

// A scan kernel runs every step by itself: no product may sit between steps.
cell.cell @scan_with_product attributes {input_names = ["x"], output_name = "h'", param_names = ["W"], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">, %W: !cell.mat<"H", "H">):
  %q = cell.mat_vec %W, %h : !cell.mat<"H", "H">, !cell.vec<"H"> -> !cell.vec<"H">
  // expected-error @+1 {{'cell.fused' op is a scan kernel but the body has products}}
  %n = cell.fused(%h, %q) {final, scan} : (!cell.vec<"H">, !cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">, %b: !cell.vec<"H">):
    cell.yield %b : !cell.vec<"H">
  }
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @stored_forward attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  // expected-error @+1 {{'cell.fused' op has stored results but is not a backward kernel}}
  %n = cell.fused(%h) {final, stored = array<i64: 0>} : (!cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %n, %n : !cell.vec<"H">, !cell.vec<"H">
}

// -----

cell.cell @stored_out_of_range attributes {input_names = ["x"], output_name = "h'", param_names = [], state_names = ["h"]} prologue {
} body {
^bb0(%x: !cell.vec<"H">, %h: !cell.vec<"H">):
  %d = cell.cotangent %h : !cell.vec<"H">
  // expected-error @+1 {{'cell.fused' op stored results must be increasing indices of its 1 results}}
  %g = cell.fused(%x, %d) {backward, num_forward_operands = 1, stored = array<i64: 1>} : (!cell.vec<"H">, !cell.vec<"H">) -> !cell.vec<"H"> {
  ^bb0(%a: !cell.vec<"H">, %b: !cell.vec<"H">):
    cell.yield %a : !cell.vec<"H">
  }
  cell.yield %h, %h : !cell.vec<"H">, !cell.vec<"H">
}
