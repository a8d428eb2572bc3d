//===- CellInterfaces.td - What an element-wise op is ------*- tablegen -*-===//
//
// An element-wise op of the cell dialect carries its own rules: its value at
// one element (the kernels of both targets are built from it), its
// derivative (the backward pass calls it) and its value on numbers (the
// front end folds constants with it). Adding a function to the language is
// an op definition in CellOps.td plus its rules in ElementwiseRules.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef CELL_INTERFACES
#define CELL_INTERFACES

include "mlir/IR/OpBase.td"

def Cell_ElementwiseMathOpInterface : OpInterface<"ElementwiseMath"> {
  let cppNamespace = "::mlir::cell";
  let description = [{
    An operation that applies one scalar function to each element of its
    operands (all of one vector type). Kernels evaluate it one element at a
    time with `emitScalar`; `cell-derive-backward` asks it for its operands'
    adjoints with `emitAdjoints`.
  }];
  let methods = [
    InterfaceMethod<[{
        The op's f32 value at one element, given its operands' f32 values
        there (arith and math ops; cell-approximate-math later replaces
        exp/tanh/log with polynomials on both targets).
      }], "::mlir::Value", "emitScalar",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc,
           "::mlir::ValueRange":$operands)>,
    InterfaceMethod<[{
        Adds each operand's adjoint (as cell ops created through `adjoints`)
        given the adjoint of the result, `resultAdjoint`. `result` stands
        for the op's result: the value saved in forward when there is one,
        so that the rule reads it instead of recomputing it.
      }], "void", "emitAdjoints",
      (ins "::mlir::cell::AdjointEmitter &":$adjoints,
           "::mlir::Value":$result, "::mlir::Value":$resultAdjoint)>,
    InterfaceMethod<[{
        Whether the result is expensive enough that training with
        --save-activations keeps it from the forward pass.
      }], "bool", "isTranscendental", (ins), "", "return false;">,
    StaticInterfaceMethod<[{
        The function on numbers, for folding constants like `sigmoid(0.5)`.
      }], "double", "evaluate", (ins "::llvm::ArrayRef<double>":$operands)>,
  ];
}

/// The op's mnemonic is a function of the cell language (`sigmoid(e)`): the
/// front end accepts and generates it by name.
def Cell_LanguageFunction : NativeOpTrait<"LanguageFunction"> {
  let cppNamespace = "::mlir::cell";
}

#endif // CELL_INTERFACES
