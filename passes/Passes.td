//===- Passes.td - cellc's transformation passes -----------*- tablegen -*-===//

#ifndef CELL_PASSES
#define CELL_PASSES

include "mlir/Pass/PassBase.td"

def HoistInputProjections : Pass<"cell-hoist-input-projections",
                                 "::mlir::cell::CellOp"> {
  let summary = "move input-only work out of the recurrence";
  let description = [{
    Every operation whose operands depend only on the cell's inputs and
    parameters (products such as `Wx @ x`, bias adds, gate math and layer
    norms of input-only values) moves from the body into the prologue, which
    the runtime runs once over all T*B rows: T small GEMMs become one large
    one. Values the body still needs become new body arguments.

    Before: `body { %p = cell.mat_vec %Wx, %x ... }`
    After:  `prologue { %p = cell.mat_vec %Wx, %x; cell.yield %p }
             body { ^bb0(..., %p_hoisted) ... }`

    Constants are cloned, never hoisted alone; operations that touch a state
    stay where they are. Where every product is input-only (SRU), the body
    left is element-wise and cell-time-scan runs it as one kernel over all
    steps: then only the products, and the work they read, move, and the
    other input-only work stays in that kernel, which reads the projections
    once instead of reading back intermediates written over all T*B rows.
  }];
}

def StackMatmuls : Pass<"cell-stack-matmuls", "::mlir::cell::CellOp"> {
  let summary = "stack products that share their vector operand";
  let description = [{
    `Wz @ x`, `Wr @ x`, `Wh @ x` become one `cell.stacked_mat_vec` whose
    weight is the three matrices' rows stacked: one GEMM instead of three.
    Products whose vectors differ are never stacked, e.g. GRU's `Uh @ (r*h)`
    stays apart from `Uz @ h` and `Ur @ h` because `r` comes from this step.
  }];
}

def FuseElementwise : Pass<"cell-fuse-elementwise", "::mlir::cell::CellOp"> {
  let summary = "group the element-wise work between products into kernels";
  let description = [{
    Products split a step into levels: level-0 work needs only arguments,
    GEMMs of level k+1 consume values of level k. All element-wise operations
    of one level (placed as late as their users allow, so fewer values cross
    kernels) become one `cell.fused` region, i.e. one kernel. The body's last
    kernel is marked `final`: it takes the current states as its first
    operands and yields exactly the next states and the output, so masking
    of finished sequences happens in one place.
  }];
}

def DeriveBackward : Pass<"cell-derive-backward", "::mlir::cell::CellOp"> {
  let summary = "reverse-mode gradients of every fused kernel";
  let description = [{
    After each forward `cell.fused` F, adds a backward kernel G (attribute
    `backward`) whose operands are F's operands followed by the gradients of
    F's results (`cell.cotangent`), and whose results are the gradients of
    F's operands. G recomputes F's intermediates rather than saving them:
    what the runtime keeps per step is only kernel operands and GEMM
    outputs. Products need no kernels: the plan derives their data-gradient
    GEMM per step (only where the gradient must reach the state) and one
    weight-gradient GEMM over all T*B rows after the loop.

    ```mlir
    %n:2 = cell.fused(%h, %p, %q) {final} ...
    %dn = cell.cotangent %n#0
    %do = cell.cotangent %n#1
    %g:3 = cell.fused(%h, %p, %q, %dn, %do) {backward, final,
                                              num_forward_operands = 3} ...
    ```

    With `save-activations`, the forward kernel also writes the results of
    its transcendental functions (sigmoid, tanh, exp, log, softplus) to
    per-step buffers, and the backward kernel reads them (operands after the
    forward operands, counted by `num_saved`) instead of recomputing them:
    less arithmetic in backward, more memory and traffic in forward.
  }];
  let options = [
    Option<"saveActivations", "save-activations", "bool", "false",
           "save transcendental results in forward instead of recomputing "
           "them in backward">
  ];
}

def TimeScan : Pass<"cell-time-scan", "::mlir::cell::CellOp"> {
  let summary = "run element-wise recurrences as one kernel over all steps";
  let description = [{
    When the body has no matrix product (SRU; SR-NMT's encoder unit), each
    (example, element) pair is an independent recurrence: marks the final
    kernel `scan`, and lower-to-loops gives it a second kernel that loops
    over all T steps itself, keeping the state in row-local scratch. The
    plan runs that one kernel instead of T step kernels (inference); training
    keeps the per-step kernels, which record the states backward needs.
    Does not apply when any product reads the state.
  }];
}

def StoreSoleGradients : Pass<"cell-store-sole-gradients",
                              "::mlir::cell::CellOp"> {
  let summary = "store gradients that have one writer instead of adding";
  let description = [{
    After cell-derive-backward, every backward kernel adds its results to
    gradient buffers the runtime zeroes first. Where a result is the only
    contribution to the gradient of a value the plan keeps in a buffer (a
    product's or kernel's result, or a vector param's per-row gradient),
    no other kernel or product adds to that range: marks the result
    `stored`. Its kernel then writes it once, zeros on inactive rows, and a
    buffer whose every range is stored needs neither the runtime's zeroing
    pass nor the kernels' reads of those zeros. A gradient with two
    contributions (a value two kernels read, a vector that feeds a product
    and a kernel) and gradients of inputs and states (the caller's arrays,
    which backward adds to) keep adding; so do all results of a stacked
    product if any of them does, since they share one buffer.
  }];
}

#endif // CELL_PASSES
