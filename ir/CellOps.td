//===- CellOps.td - Operations of the cell dialect ---------*- tablegen -*-===//

#ifndef CELL_OPS
#define CELL_OPS

include "ir/CellTypes.td"
include "ir/CellInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def Cell_DimExprArrayAttr
    : TypedArrayAttrBase<Cell_DimExprAttr, "array of dimension expressions">;

def Cell_CellOp : Cell_Op<"cell", [Symbol, IsolatedFromAbove]> {
  let summary = "one recurrent cell: the computation of one step";
  let description = [{
    The body's block arguments are the cell's inputs, states and parameters,
    in that order, followed by any values hoisted into the prologue. The body
    ends in `cell.yield` with the next value of every state, then the output.

    `param_inits` maps a param's name to its initialiser
    (`#cell.init<orthogonal>`) for the params whose declaration has one
    (`param U: [H, H] ~ orthogonal`); the verifier checks that each names a
    param and suits its rank. The schedule's `sched.param` carries it on.

    With `probe_names` (`cellc --probe NAME`), the yielded output is the
    cell's own output followed by the probed values, whose lengths
    `probe_lengths` gives: the kernels write them with the output, and the
    runtime hands them to the caller separately (`probe` lines of the plan).

    The prologue is empty until `cell-hoist-input-projections` fills it: it
    then takes the inputs and parameters as block arguments and yields the
    values that depend on no state. The runtime computes it once for all
    T*B (step, example) rows before the recurrence starts.

    ```mlir
    cell.cell @atr attributes {input_names = ["x"], state_names = ["h"],
                               param_names = ["Wx", "Wh"], output_name = "h'"}
    prologue {
    } body {
    ^bb0(%x: !cell.vec<"I">, %h: !cell.vec<"H">,
         %Wx: !cell.mat<"H", "I">, %Wh: !cell.mat<"H", "H">):
      %p = cell.mat_vec %Wx, %x : !cell.mat<"H", "I">, !cell.vec<"I"> -> !cell.vec<"H">
      ...
      cell.yield %next, %next : !cell.vec<"H">, !cell.vec<"H">
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrArrayAttr:$input_names,
                       StrArrayAttr:$state_names, StrArrayAttr:$param_names,
                       StrAttr:$output_name,
                       OptionalAttr<StrArrayAttr>:$probe_names,
                       OptionalAttr<Cell_DimExprArrayAttr>:$probe_lengths,
                       OptionalAttr<DictionaryAttr>:$param_inits);
  let regions = (region AnyRegion:$prologue, SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name attr-dict-with-keyword `prologue` $prologue `body` $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name,
                   "::llvm::ArrayRef<::llvm::StringRef>":$inputNames,
                   "::llvm::ArrayRef<::llvm::StringRef>":$stateNames,
                   "::llvm::ArrayRef<::llvm::StringRef>":$paramNames,
                   "::llvm::StringRef":$outputName,
                   "::mlir::TypeRange":$argTypes,
                   CArg<"::llvm::ArrayRef<::mlir::Location>", "{}">:$argLocs)>
  ];
  let extraClassDeclaration = [{
    ::mlir::Block *getBodyBlock() { return &getBody().front(); }
    /// The prologue's block, or nullptr when nothing is hoisted.
    ::mlir::Block *getPrologueBlock() {
      return getPrologue().empty() ? nullptr : &getPrologue().front();
    }
    unsigned getNumInputs() { return getInputNames().size(); }
    unsigned getNumStates() { return getStateNames().size(); }
    unsigned getNumParams() { return getParamNames().size(); }
    unsigned getNumHoisted() {
      return getBodyBlock()->getNumArguments() - getNumInputs() -
             getNumStates() - getNumParams();
    }
    ::mlir::Block::BlockArgListType getInputArgs() {
      return getBodyBlock()->getArguments().slice(0, getNumInputs());
    }
    ::mlir::Block::BlockArgListType getStateArgs() {
      return getBodyBlock()->getArguments().slice(getNumInputs(),
                                                  getNumStates());
    }
    ::mlir::Block::BlockArgListType getParamArgs() {
      return getBodyBlock()->getArguments().slice(
          getNumInputs() + getNumStates(), getNumParams());
    }
    ::mlir::Block::BlockArgListType getHoistedArgs() {
      return getBodyBlock()->getArguments().drop_front(
          getNumInputs() + getNumStates() + getNumParams());
    }
    /// The body's terminator: next states, then the output.
    YieldOp getYield();
    /// The probed values (cellc --probe) as (name, length), in the order
    /// they follow the cell's own output in the yielded output.
    ::llvm::SmallVector<std::pair<::llvm::StringRef, ::cellc::DimExpr>>
    getProbes();
    /// The length of the cell's own output: the yielded output's less the
    /// probes'.
    ::cellc::DimExpr getOwnOutputLength();
    /// Whether the body has a matrix product, which must run between steps.
    bool hasStepProducts();
    /// The initialiser param `name` declares; none if it declares none.
    ::cellrt::InitScheme getParamInit(::llvm::StringRef name);
  }];
}

/// A count or an index that a pass records on an op.
def Cell_Count : ConfinedAttr<I64Attr, [IntNonNegative]>;

def Cell_FusedOp : Cell_Op<"fused", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">]> {
  let summary = "element-wise work that runs as one kernel";
  let description = [{
    Created by `cell-fuse-elementwise`: a maximal group of element-wise
    operations between matrix products. Each becomes one loop nest over
    (row, element) and one kernel of the plan. The region's arguments are
    the operands; `cell.yield` gives the results.

    ```mlir
    %h1 = cell.fused(%p, %q, %h) : (!cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">) -> !cell.vec<"H"> {
    ^bb0(%a: !cell.vec<"H">, %b: !cell.vec<"H">, %c: !cell.vec<"H">):
      ...
      cell.yield %r : !cell.vec<"H">
    }
    ```

    Passes and codegen mark kernels for each other; the verifiers
    (FusedOp::verify, and across kernels CellOp::verifyRegions) check that
    the marks agree with the IR:
    - `final` (cell-fuse-elementwise): the body's one last forward kernel.
      It takes the current states as its first operands, the body yields
      its results (the next states, then the output), and it masks finished
      sequences. Its backward twin keeps the mark.
    - `backward` (cell-derive-backward): a backward kernel. Its operands are
      its forward kernel's `num_forward_operands` operands, then `num_saved`
      activations that kernel saved, then the `cell.cotangent`s of that
      kernel's results; its results are the forward operands' gradients.
    - `scan` (cell-time-scan): the final forward kernel of a body without
      products; its kernel runs all steps, in inference and in training
      (where it also writes every step's state into the history).
    - `stored` (cell-store-sole-gradients): on a backward kernel, the
      results that are the only contribution to their gradient's buffer.
      The kernel stores them (an inactive row stores zeros) instead of
      adding to them, and the plan marks buffers written only so as
      `written`, which the runtime does not zero.
    - `kernel` (cell-lower-to-loops): the index of its kernel function,
      which the plan refers to.
  }];
  let arguments = (ins Variadic<Cell_AnyVec>:$inputs,
                       UnitAttr:$final,
                       UnitAttr:$backward,
                       OptionalAttr<Cell_Count>:$num_forward_operands,
                       OptionalAttr<Cell_Count>:$num_saved,
                       UnitAttr:$scan,
                       OptionalAttr<DenseI64ArrayAttr>:$stored,
                       OptionalAttr<Cell_Count>:$kernel);
  let results = (outs Variadic<Cell_AnyVec>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let extraClassDeclaration = [{
    /// Whether result `index` is in `stored`: the kernel stores it rather
    /// than adding it to its gradient.
    bool isStoredResult(unsigned index) {
      std::optional<::llvm::ArrayRef<int64_t>> indices = getStored();
      return indices && ::llvm::is_contained(*indices, int64_t(index));
    }
  }];
  let hasVerifier = 1;
}

def Cell_YieldOp : Cell_Op<"yield", [Pure, ReturnLike, Terminator,
    ParentOneOf<["CellOp", "FusedOp"]>]> {
  let summary = "ends a cell body, the prologue or a fused region";
  let description = [{
    In a cell body: the next value of every state in declaration order, then
    the output. In the prologue: the hoisted values. In `cell.fused`: the
    results.
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

def Cell_MatVecOp : Cell_Op<"mat_vec", [Pure]> {
  let summary = "matrix-vector product `W @ x`";
  let description = [{
    `W` is a matrix parameter `[R, C]`, `x` a `[C]` vector; the result is
    `[R]`. Over a batch this is one GEMM.

    ```mlir
    %p = cell.mat_vec %W, %x : !cell.mat<"H", "I">, !cell.vec<"I"> -> !cell.vec<"H">
    ```
  }];
  let arguments = (ins Cell_AnyMat:$matrix, Cell_AnyVec:$vector);
  let results = (outs Cell_AnyVec:$result);
  let assemblyFormat = [{
    $matrix `,` $vector attr-dict `:` type($matrix) `,` type($vector) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Cell_StackedMatVecOp : Cell_Op<"stacked_mat_vec", [Pure]> {
  let summary = "several products of one vector, run as one GEMM";
  let description = [{
    Created by `cell-stack-matmuls` from `cell.mat_vec`s that share their
    vector operand: the matrices' rows are stacked into one weight so the
    batch needs one GEMM. Result i is `matrices[i] @ vector`.

    ```mlir
    %zr:2 = cell.stacked_mat_vec %Wz, %Wr(%x) : (!cell.mat<"H", "I">, !cell.mat<"H", "I">), !cell.vec<"I"> -> !cell.vec<"H">, !cell.vec<"H">
    ```
  }];
  let arguments = (ins Variadic<Cell_AnyMat>:$matrices, Cell_AnyVec:$vector);
  let results = (outs Variadic<Cell_AnyVec>:$results);
  let assemblyFormat = [{
    $matrices `(` $vector `)` attr-dict `:` `(` type($matrices) `)` `,`
    type($vector) `->` type($results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

def Cell_ConstantOp : Cell_Op<"constant", [Pure]> {
  let summary = "a number broadcast to a vector";
  let description = [{
    ```mlir
    %one = cell.constant 1.000000e+00 : !cell.vec<"H">
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Cell_AnyVec:$result);
  let assemblyFormat = "$value attr-dict `:` type($result)";
  // The value must be a finite float32: the kernels compute in float32.
  let hasVerifier = 1;
}

class Cell_BinaryOp<string mnemonic, string what>
    : Cell_Op<mnemonic, [Pure, SameOperandsAndResultType,
                         DeclareOpInterfaceMethods<Cell_ElementwiseMathOpInterface>]> {
  let summary = "element-wise " # what;
  let description = [{
    Operands and result have the same vector type.

    ```mlir
    %r = cell.}] # mnemonic # [{ %a, %b : !cell.vec<"H">
    ```
  }];
  let arguments = (ins Cell_AnyVec:$lhs, Cell_AnyVec:$rhs);
  let results = (outs Cell_AnyVec:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Cell_AddOp : Cell_BinaryOp<"add", "sum">;
def Cell_SubOp : Cell_BinaryOp<"sub", "difference">;
def Cell_MulOp : Cell_BinaryOp<"mul", "product">;
def Cell_DivOp : Cell_BinaryOp<"div", "quotient">;

/// An element-wise function of one vector; its rules (value at an element,
/// derivative, value on numbers) are in ElementwiseRules.cpp. `overridden`
/// lists interface methods with defaults that the op redefines.
class Cell_UnaryOp<string mnemonic, string what, list<Trait> traits = [],
                   list<string> overridden = []>
    : Cell_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType,
          DeclareOpInterfaceMethods<Cell_ElementwiseMathOpInterface,
                                    overridden>], traits)> {
  let summary = "element-wise " # what;
  let description = [{
    ```mlir
    %r = cell.}] # mnemonic # [{ %a : !cell.vec<"H">
    ```
  }];
  let arguments = (ins Cell_AnyVec:$operand);
  let results = (outs Cell_AnyVec:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

/// A function the cell language calls by this op's mnemonic.
class Cell_FunctionOp<string mnemonic, string what,
                      list<string> overridden = []>
    : Cell_UnaryOp<mnemonic, what, [Cell_LanguageFunction], overridden>;
/// A function whose value --save-activations keeps for backward.
class Cell_TranscendentalOp<string mnemonic, string what>
    : Cell_FunctionOp<mnemonic, what, ["isTranscendental"]>;

def Cell_NegOp : Cell_UnaryOp<"neg", "negation">;
def Cell_SigmoidOp : Cell_TranscendentalOp<"sigmoid",
    "logistic sigmoid 1/(1+exp(-x))">;
def Cell_TanhOp : Cell_TranscendentalOp<"tanh", "hyperbolic tangent">;
def Cell_ReluOp : Cell_FunctionOp<"relu", "max(x, 0)">;
def Cell_ExpOp : Cell_TranscendentalOp<"exp", "exponential">;
def Cell_LogOp : Cell_TranscendentalOp<"log", "natural logarithm">;
def Cell_SoftplusOp : Cell_TranscendentalOp<"softplus", "log(1 + exp(x))">;
def Cell_HardsigmoidOp : Cell_FunctionOp<"hardsigmoid",
    "piecewise-linear sigmoid min(max(x/6 + 1/2, 0), 1) (PyTorch's)">;
def Cell_GeluOp : Cell_TranscendentalOp<"gelu",
    "GELU, tanh form: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))">;
def Cell_HeavisideOp : Cell_UnaryOp<"heaviside",
    "step function: 1 where x > 0, else 0 (relu's derivative)">;

//===----------------------------------------------------------------------===//
// Whole-vector operations
//===----------------------------------------------------------------------===//

def Cell_LayerNormOp : Cell_Op<"layer_norm",
    [Pure, SameOperandsAndResultType]> {
  let summary = "normalise a vector to zero mean and unit variance";
  let description = [{
    `(x - mean(x)) / sqrt(var(x) + 1e-5)` with the biased variance. The
    language's `layernorm(e, g, b)` is generated as
    `cell.add(cell.mul(cell.layer_norm(e), g), b)`, so gain and bias stay
    ordinary element-wise work.

    ```mlir
    %n = cell.layer_norm %x : !cell.vec<"3*H">
    ```
  }];
  let arguments = (ins Cell_AnyVec:$operand);
  let results = (outs Cell_AnyVec:$result);
  let assemblyFormat = "$operand attr-dict `:` type($result)";
}

def Cell_LayerNormGradOp : Cell_Op<"layer_norm_grad",
    [Pure, SameOperandsAndResultType]> {
  let summary = "the input gradient of layer_norm";
  let description = [{
    With `n = layer_norm(x)`, `r = 1/sqrt(var(x) + 1e-5)` and the gradient
    `dy` of `n`: `dx = r * (dy - mean(dy) - n * mean(dy * n))`. Created by
    `cell-derive-backward`.

    ```mlir
    %dx = cell.layer_norm_grad %x, %dy : !cell.vec<"3*H">
    ```
  }];
  let arguments = (ins Cell_AnyVec:$input, Cell_AnyVec:$result_gradient);
  let results = (outs Cell_AnyVec:$result);
  let assemblyFormat = "$input `,` $result_gradient attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

def Cell_CotangentOp : Cell_Op<"cotangent", [Pure,
    TypesMatchWith<"the gradient has the value's type", "value", "result",
                   "$_self">]> {
  let summary = "the gradient of the loss with respect to a value";
  let description = [{
    A name for dL/d(value), created by `cell-derive-backward` as an operand
    of a backward kernel. The plan maps it to the value's gradient buffer
    (`dnext:h`, `dout`, `step:dv1`, ...).

    ```mlir
    %dq = cell.cotangent %q : !cell.vec<"H">
    ```
  }];
  let arguments = (ins Cell_AnyVec:$value);
  let results = (outs Cell_AnyVec:$result);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def Cell_ConcatOp : Cell_Op<"concat", [Pure]> {
  let summary = "join vectors end to end";
  let description = [{
    ```mlir
    %c = cell.concat %a, %b : !cell.vec<"H">, !cell.vec<"I"> -> !cell.vec<"H+I">
    ```
  }];
  let arguments = (ins Variadic<Cell_AnyVec>:$inputs);
  let results = (outs Cell_AnyVec:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Cell_SplitOp : Cell_Op<"split", [Pure]> {
  let summary = "cut a vector into equal consecutive parts";
  let description = [{
    ```mlir
    %a, %g, %z = cell.split %x : !cell.vec<"3*H"> -> !cell.vec<"H">, !cell.vec<"H">, !cell.vec<"H">
    ```
  }];
  let arguments = (ins Cell_AnyVec:$input);
  let results = (outs Variadic<Cell_AnyVec>:$results);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($results)
  }];
  let hasVerifier = 1;
}

def Cell_SliceOp : Cell_Op<"slice", [Pure]> {
  let summary = "a contiguous part of a vector";
  let description = [{
    The elements `[offset, offset + length(result))` of the input; `offset`
    is a dimension expression. Created by `cell-derive-backward` for the
    gradient of `cell.concat`.

    ```mlir
    %b = cell.slice %x {offset = #cell.dim<"H">} : !cell.vec<"H+I"> -> !cell.vec<"I">
    ```
  }];
  let arguments = (ins Cell_AnyVec:$input, Cell_DimExprAttr:$offset);
  let results = (outs Cell_AnyVec:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

#endif // CELL_OPS
