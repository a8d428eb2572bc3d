//===- CellDialect.td - The cell dialect -------------------*- tablegen -*-===//

#ifndef CELL_DIALECT
#define CELL_DIALECT

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Cell_Dialect : Dialect {
  let name = "cell";
  let summary = "One time step of a recurrent cell, for one example";
  let description = [{
    The `cell` dialect is what a `.cell` file means: a `cell.cell` holds the
    computation of one time step for one example, on vectors whose lengths are
    symbolic dimension expressions (`!cell.vec<"3*H">`). Passes hoist the
    input-only part out of the recurrence, stack products that share an
    operand and fuse element-wise work into kernels; the batch and time
    dimensions only appear when kernels are lowered to loops.
  }];
  let cppNamespace = "::mlir::cell";
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let useFoldAPI = kEmitFoldAdaptorFolder;
  let extraClassDeclaration = [{
    void registerAttributes();
  }];
}

class Cell_Op<string mnemonic, list<Trait> traits = []>
    : Op<Cell_Dialect, mnemonic, traits>;

class Cell_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Cell_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

#endif // CELL_DIALECT
