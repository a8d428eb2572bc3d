//===- ScheduleOps.td - The schedule of a compiled cell ----*- tablegen -*-===//
//
// The `sched` dialect: what the runtime runs for a cell, as IR. A program
// declares the cell's arrays, the buffers that carry values between its
// operations and the stacked weights, then lists the products and kernels
// of each phase in order. cell-build-schedule produces it from a lowered
// cell; it converts to the runtime's plan (docs/plan-format.md), whose
// tables go into the object.
//
//===----------------------------------------------------------------------===//

#ifndef SCHED_OPS
#define SCHED_OPS

include "ir/CellAttributes.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"
include "mlir/IR/SymbolInterfaces.td"

def Schedule_Dialect : Dialect {
  let name = "sched";
  let summary = "The schedule of a compiled cell: buffers, weights, products "
                "and kernels per phase";
  let description = [{
    A `sched.program` is the runtime's plan as IR. Its declarations
    (`sched.input`, `state`, `param`, `probe`, `buffer`, `weight`,
    `scratch`) name arrays, one namespace per kind as in the plan; its
    operations (`sched.gemm`, `kernel`, `wgrad`, `pgrad`) refer to them
    through `#sched.ref` attributes, whose kind says which namespace, and
    run in program order within each phase. The program verifies with the
    runtime's own plan rules, so a schedule the runtime would refuse fails
    where it is built.
  }];
  let cppNamespace = "::mlir::sched";
  let dependentDialects = ["::mlir::cell::CellDialect"];
  let useDefaultAttributePrinterParser = 1;
}

class Sched_Op<string mnemonic, list<Trait> traits = []>
    : Op<Schedule_Dialect, mnemonic, traits>;

include "schedule/PlanEnums.td"

//===----------------------------------------------------------------------===//
// References
//===----------------------------------------------------------------------===//

def Sched_RefAttr : AttrDef<Schedule_Dialect, "Ref"> {
  let mnemonic = "ref";
  let summary = "an operand: a declared array at a column offset";
  let description = [{
    `#sched.ref<seq @v0 + "2*H">` is buffer `v0`'s rows from column 2*H on;
    `#sched.ref<next @h>` the state `h` after this step; `#sched.ref<out>`
    the step's output row. The kinds are the plan's (docs/plan-format.md):
    input, state, next, param, seq, step, out, and in backward operations
    dnext, dstate, dout and dinput. `out` and `dout` name nothing.
  }];
  let parameters = (ins "::mlir::sched::RefKind":$kind,
                        "::mlir::FlatSymbolRefAttr":$target,
                        DimExprParameter:$column);
  let hasCustomAssemblyFormat = 1;
}

def Sched_DimArrayAttr
    : TypedArrayAttrBase<Cell_DimExprAttr, "array of dimension expressions">;

def Sched_RefArrayAttr
    : TypedArrayAttrBase<Sched_RefAttr, "array of schedule references">;

//===----------------------------------------------------------------------===//
// The program and its declarations
//===----------------------------------------------------------------------===//

def Sched_ProgramOp : Sched_Op<"program", [NoTerminator,
                                           SingleBlock, IsolatedFromAbove,
                                           NoRegionArguments]> {
  let summary = "what the runtime runs for one cell";
  let description = [{
    `dims` are the symbolic dimensions in the order of the kernels' `dims`
    array; `output` the width of the row the cell emits each step. With
    `precision = "bf16"` the products read bfloat16.

    ```mlir
    sched.program "atr" dims ["H", "I"] output <"H"> {
      sched.input @x <"I">
      sched.state @h <"H">
      sched.param @Wx [#cell.dim<"H">, #cell.dim<"I">]
      sched.buffer @v0 seq <"H">
      sched.weight @W0 [@Wx]
      sched.gemm pre <seq @v0> = @W0 * <input @x>
      sched.kernel step 0 [#sched.ref<state @h>, #sched.ref<seq @v0>, ...]
    }
    ```
  }];
  let arguments = (ins StrAttr:$cell, StrArrayAttr:$dims,
                       Cell_DimExprAttr:$output_width,
                       OptionalAttr<StrAttr>:$precision);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $cell `dims` $dims `output` $output_width attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$cell,
                   "::llvm::ArrayRef<std::string>":$dims,
                   "const ::cellc::DimExpr &":$outputWidth)>
  ];
}

// Declarations are named as symbols but are not MLIR symbols: as in the
// plan, each kind has its names to itself (a cell's param may be called
// `W1` beside the stacked weight `W1`), and a reference's kind says which
// it means.
class Sched_Declaration<string mnemonic>
    : Sched_Op<mnemonic, [HasParent<"ProgramOp">]>;

def Sched_InputOp : Sched_Declaration<"input"> {
  let summary = "an input of LEN values per step and example";
  let description = [{
    With `written_gradient` backward kernels store, not add, its gradient
    (Cell::withInputProducts).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Cell_DimExprAttr:$length,
                       UnitAttr:$written_gradient);
  let assemblyFormat = "$sym_name $length attr-dict";
}

def Sched_StateOp : Sched_Declaration<"state"> {
  let summary = "a state of LEN values per example";
  let arguments = (ins SymbolNameAttr:$sym_name, Cell_DimExprAttr:$length);
  let assemblyFormat = "$sym_name $length attr-dict";
}

def Sched_ProbeOp : Sched_Declaration<"probe"> {
  let summary = "a probed value (cellc --probe), written after the output";
  let arguments = (ins SymbolNameAttr:$sym_name, Cell_DimExprAttr:$length);
  let assemblyFormat = "$sym_name $length attr-dict";
}

def Sched_ParamOp : Sched_Declaration<"param"> {
  let summary = "a matrix [ROWS, COLS] or vector [LEN] parameter";
  let description = [{
    `init` is the initialiser the cell declares for it, which the runtime
    draws (Cell::initParams); the plan writes it after the shape.

    ```mlir
    sched.param @bf [#cell.dim<"H">] init <constant 1.000000e+00>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       Sched_DimArrayAttr:$shape,
                       OptionalAttr<Cell_InitAttr>:$init);
  let assemblyFormat = "$sym_name $shape (`init` $init^)? attr-dict";
}

def Sched_BufferOp : Sched_Declaration<"buffer"> {
  let summary = "rows the runtime allocates: [T*B, LEN] (seq) or [B, LEN]";
  let description = [{
    `written`: a gradient buffer whose every column backward kernels store,
    each once per row (cell-store-sole-gradients), so it needs no zeroing.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, Sched_Extent:$extent,
                       Cell_DimExprAttr:$length, UnitAttr:$written);
  let assemblyFormat = "$sym_name $extent $length attr-dict";
}

def Sched_WeightOp : Sched_Declaration<"weight"> {
  let summary = "the rows of matrix params stacked in order";
  let arguments = (ins SymbolNameAttr:$sym_name,
                       FlatSymbolRefArrayAttr:$params);
  let assemblyFormat = "$sym_name $params attr-dict";
}

def Sched_ScratchOp : Sched_Op<"scratch", [HasParent<"ProgramOp">]> {
  let summary = "the row-local scratch a kernel needs, after its arguments";
  let arguments = (ins I64Attr:$kernel, Sched_DimArrayAttr:$lengths);
  let assemblyFormat = "$kernel $lengths attr-dict";
}

//===----------------------------------------------------------------------===//
// Operations
//===----------------------------------------------------------------------===//

def Sched_GemmOp : Sched_Op<"gemm", [HasParent<"ProgramOp">]> {
  let summary = "OUT = IN · Wᵀ forward, OUT += IN · W backward";
  let description = [{
    In a forward phase the rows of `in` times the stacked weight's
    transpose; in a backward phase the gradient rows `in` times the weight,
    added into `out`.
  }];
  let arguments = (ins Sched_Phase:$phase, Sched_RefAttr:$out,
                       FlatSymbolRefAttr:$weight, Sched_RefAttr:$in);
  let assemblyFormat = "$phase $out `=` $weight `*` $in attr-dict";
}

def Sched_KernelOp : Sched_Op<"kernel", [HasParent<"ProgramOp">]> {
  let summary = "a fused kernel of the image, over the phase's rows";
  let arguments = (ins Sched_Phase:$phase, I64Attr:$kernel,
                       Sched_RefArrayAttr:$args);
  let assemblyFormat = "$phase $kernel $args attr-dict";
}

def Sched_WgradOp : Sched_Op<"wgrad", [HasParent<"ProgramOp">]> {
  let summary = "a stacked weight's gradient += DYᵀ · X over all T*B rows";
  let arguments = (ins FlatSymbolRefAttr:$weight, Sched_RefAttr:$dy,
                       Sched_RefAttr:$x);
  let assemblyFormat = "$weight `(` $dy `,` $x `)` attr-dict";
}

def Sched_PgradOp : Sched_Op<"pgrad", [HasParent<"ProgramOp">]> {
  let summary = "a vector param's gradient += the sum of a buffer's rows";
  let arguments = (ins FlatSymbolRefAttr:$param, Sched_RefAttr:$source);
  let assemblyFormat = "$param `(` $source `)` attr-dict";
}

#endif // SCHED_OPS
