//===- Passes.td - cellc's code generation passes ----------*- tablegen -*-===//

#ifndef CELL_CODEGEN_PASSES
#define CELL_CODEGEN_PASSES

include "mlir/Pass/PassBase.td"

def LowerToLoops : Pass<"cell-lower-to-loops", "::mlir::ModuleOp"> {
  let summary = "turn every cell.fused into a kernel function of loops";
  let description = [{
    Each `cell.fused` (after fuse-elementwise) becomes a `func.func`
    `cellc_<cell>_k<N>` with the uniform kernel ABI of cellrt/Kernel.h: a
    `scf.parallel` over rows whose body evaluates the fused expressions one
    element at a time in a single loop per output length (arith/math ops on
    f32, so LLVM vectorises them). Whole-vector operations (layer_norm,
    concat, split) read operands materialised in row-local scratch. The
    body's final kernel masks rows whose sequence has ended. The fused op
    keeps a `kernel = N` attribute so the plan can name it.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
  let options = [
    Option<"gpu", "gpu", "bool", "false",
           "emit GPU kernels: one thread per row (blockIdx.x * blockDim.x + "
           "threadIdx.x), scratch from the launcher">
  ];
}


def EmitRuntimeImage : Pass<"cell-emit-runtime-image", "::mlir::ModuleOp"> {
  let summary = "replace each lowered cell by its plan and kernel table";
  let description = [{
    Writes the plan of every `cell.cell` (docs/plan-format.md), the text of
    its `sched.program` (built here if cell-build-schedule has not run),
    into the globals the runtime reads (`cellc_<cell>_plan`,
    `cellc_<cell>_kernels`, `cellc_<cell>_kernel_names`,
    `cellc_<cell>_num_kernels`) and erases the cell and its program, leaving
    only kernels and data for the LLVM lowering. A program without its cell
    is an error.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::sched::ScheduleDialect"];
}

def ApproximateMath : Pass<"cell-approximate-math", "::mlir::ModuleOp"> {
  let summary = "replace transcendental functions by vectorisable polynomials";
  let description = [{
    `math.exp`, `math.tanh`, `math.log`, `math.log1p` lowered as they are
    become scalar libm calls (7.9 ns/element here) and stop the loop
    vectoriser; polynomial approximations are plain arithmetic (1.6
    ns/element vectorised). `math.exp` (and so sigmoid and softplus) uses
    cellc's own Cephes-style expansion, within 1 ulp over its whole range
    (MLIR's is off by up to ~20 ulp, which chaotic recurrences amplify);
    tanh, log and log1p use MLIR's.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // CELL_CODEGEN_PASSES
