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

#endif // CELL_ATTRIBUTES
