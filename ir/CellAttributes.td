//===- CellAttributes.td - Attributes of the cell dialect --*- tablegen -*-===//

#ifndef CELL_ATTRIBUTES
#define CELL_ATTRIBUTES

include "ir/CellDialect.td"

/// A dimension expression held as a cellc::DimExpr, canonical by
/// construction: parsing `"H+H"` yields the same value as `"2*H"`, so types
/// and attributes that carry one compare (and unique) by value, and nothing
/// downstream needs to parse text again. Printed as its canonical text in
/// quotes.
def DimExprParameter : AttrParameter<"::cellc::DimExpr",
                                     "dimension expression",
                                     "const ::cellc::DimExpr &"> {
  let parser = "::mlir::cell::parseDimExpr($_parser)";
  let printer = "::mlir::cell::printDimExpr($_printer, $_self)";
}

class Cell_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Cell_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Cell_DimExprAttr : Cell_Attr<"DimExpr", "dim"> {
  let summary = "a dimension expression, e.g. `#cell.dim<\"3*H\">`";
  let description = [{
    A linear expression over symbolic dimensions, as in the vector types;
    `cell.slice` uses one for its offset. The text is canonicalised when it
    is parsed: `#cell.dim<"H+H">` is `#cell.dim<"2*H">`.
  }];
  let parameters = (ins DimExprParameter:$value);
  let assemblyFormat = "`<` $value `>`";
  // Ops that take one see the expression itself and can be built from one.
  let returnType = "const ::cellc::DimExpr &";
  let convertFromStorage = "$_self.getValue()";
  let constBuilderCall =
      "::mlir::cell::DimExprAttr::get($_builder.getContext(), $0)";
}

/// How a param's initial values are drawn, held as the runtime's
/// cellrt::InitScheme (whose header names the schemes and their rules).
def InitSchemeParameter : AttrParameter<"::cellrt::InitScheme",
                                        "param initialiser"> {
  let parser = "::mlir::cell::parseInitScheme($_parser)";
  let printer = "::mlir::cell::printInitScheme($_printer, $_self)";
}

def Cell_InitAttr : Cell_Attr<"Init", "init"> {
  let summary = "how a param starts, e.g. `#cell.init<uniform 5.0e-02>`";
  let description = [{
    A param's initialiser as the cell declares it (`param bf: [H] = 1`,
    `param U: [4*H, H] ~ orthogonal`): `constant C`, `uniform A`,
    `normal S`, `orthogonal`, `fan_in` or `fan_out`. `cell.cell` holds one
    per declared initialiser in its `param_inits` dictionary; the schedule
    and the plan carry it to the runtime, which draws it
    (Cell::initParams). C is a finite float32, A and S positive ones.

    ```mlir
    param_inits = {U = #cell.init<orthogonal>, bf = #cell.init<constant 1.0>}
    ```
  }];
  let parameters = (ins InitSchemeParameter:$scheme);
  let assemblyFormat = "`<` $scheme `>`";
  let genVerifyDecl = 1;
}

#endif // CELL_ATTRIBUTES
