//===- CellAttributes.cpp - Attributes of the cell dialect ----------------===//

#include "ir/CellAttributes.h"
#include "ir/CellDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::cell;

llvm::hash_code cellc::hash_value(const DimExpr &expr) {
  const std::vector<DimExpr::Term> &terms = expr.getTerms();
  return llvm::hash_combine(
      expr.getConstant(), llvm::hash_combine_range(terms.begin(), terms.end()));
}

FailureOr<cellc::DimExpr> mlir::cell::parseDimExpr(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  std::string text;
  if (failed(parser.parseString(&text)))
    return failure();
  std::optional<cellc::DimExpr> expr = cellc::DimExpr::parse(text);
  if (!expr) {
    parser.emitError(loc) << "malformed dimension '" << text << "'";
    return failure();
  }
  return *expr;
}

void mlir::cell::printDimExpr(AsmPrinter &printer, const cellc::DimExpr &expr) {
  printer << '"' << expr.str() << '"';
}

#define GET_ATTRDEF_CLASSES
#include "ir/CellAttributes.cpp.inc"

void CellDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/CellAttributes.cpp.inc"
      >();
}
