//===- CellTypes.td - Types of the cell dialect ------------*- tablegen -*-===//

#ifndef CELL_TYPES
#define CELL_TYPES

include "ir/CellAttributes.td"

def Cell_VecType : Cell_Type<"Vec", "vec"> {
  let summary = "a vector of float32 whose length is a dimension expression";
  let description = [{
    The value of one example at one step. The length is a linear expression
    over symbolic dimensions, e.g. `!cell.vec<"H">`, `!cell.vec<"3*H">`,
    `!cell.vec<"512">`; it is canonicalised when parsed, so
    `!cell.vec<"H+H">` is `!cell.vec<"2*H">`.
  }];
  let parameters = (ins DimExprParameter:$length);
  let assemblyFormat = "`<` $length `>`";
  // At least one element for every size of the symbols, and at most
  // 2^31 - 1 when each is 1, as the front end requires (IR read as text is
  // checked by it too).
  let genVerifyDecl = 1;
}

def Cell_MatType : Cell_Type<"Mat", "mat"> {
  let summary = "a float32 matrix parameter [rows, cols]";
  let description = [{
    A weight matrix, `!cell.mat<"H", "I">`; only matrix parameters may be the
    left operand of `cell.mat_vec`.
  }];
  let parameters = (ins DimExprParameter:$rows, DimExprParameter:$cols);
  let assemblyFormat = "`<` $rows `,` $cols `>`";
  // Each dimension as a vector's length.
  let genVerifyDecl = 1;
}

def Cell_AnyVec : Type<CPred<"$_self.isa<::mlir::cell::VecType>()">,
                       "cell vector", "::mlir::cell::VecType">;
def Cell_AnyMat : Type<CPred<"$_self.isa<::mlir::cell::MatType>()">,
                       "cell matrix", "::mlir::cell::MatType">;

#endif // CELL_TYPES
