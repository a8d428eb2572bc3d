//===- CellTypes.td - Types of the cell dialect ------------*- tablegen -*-===//

#ifndef CELL_TYPES
#define CELL_TYPES

include "ir/CellDialect.td"

def Cell_VecType : Cell_Type<"Vec", "vec"> {
  let summary = "a vector of float32 whose length is a dimension expression";
  let description = [{
    The value of one example at one step. The length is a linear expression
    over symbolic dimensions in canonical form, e.g. `!cell.vec<"H">`,
    `!cell.vec<"3*H">`, `!cell.vec<"512">`.
  }];
  let parameters = (ins StringRefParameter<"length expression">:$length);
  let assemblyFormat = "`<` $length `>`";
  let genVerifyDecl = 1;
}

def Cell_MatType : Cell_Type<"Mat", "mat"> {
  let summary = "a float32 matrix parameter [rows, cols]";
  let description = [{
    A weight matrix, `!cell.mat<"H", "I">`; only matrix parameters may be the
    left operand of `cell.mat_vec`.
  }];
  let parameters = (ins StringRefParameter<"rows">:$rows,
                        StringRefParameter<"cols">:$cols);
  let assemblyFormat = "`<` $rows `,` $cols `>`";
  let genVerifyDecl = 1;
}

def Cell_AnyVec : Type<CPred<"$_self.isa<::mlir::cell::VecType>()">,
                       "cell vector", "::mlir::cell::VecType">;
def Cell_AnyMat : Type<CPred<"$_self.isa<::mlir::cell::MatType>()">,
                       "cell matrix", "::mlir::cell::MatType">;

#endif // CELL_TYPES
