//===- CellAttributes.cpp - Attributes of the cell dialect ----------------===//

#include "ir/CellAttributes.h"
#include "ir/CellDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>

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

int64_t mlir::cell::valueAtOnes(const cellc::DimExpr &dim) {
  std::map<std::string, int64_t> ones;
  for (const cellc::DimExpr::Term &term : dim.getTerms())
    ones[term.first] = 1;
  return *dim.evaluate(ones);
}

DimensionProblem mlir::cell::findDimensionProblem(const cellc::DimExpr &dim) {
  auto isNegative = [](const cellc::DimExpr::Term &t) { return t.second < 0; };
  auto isPositive = [](const cellc::DimExpr::Term &t) { return t.second > 0; };
  if (dim.getConstant() <= 0 && llvm::none_of(dim.getTerms(), isPositive))
    return DimensionProblem::NeverPositive;
  bool negativeTerm = llvm::any_of(dim.getTerms(), isNegative);
  // With no negative coefficient the value is smallest when every symbol
  // is 1.
  if (negativeTerm || valueAtOnes(dim) < 1)
    return DimensionProblem::NotPositiveForAllSizes;
  if (valueAtOnes(dim) > kMaxDimension)
    return DimensionProblem::TooLarge;
  return DimensionProblem::None;
}

LogicalResult
mlir::cell::verifyDimension(function_ref<InFlightDiagnostic()> emitError,
                            const cellc::DimExpr &dim) {
  switch (findDimensionProblem(dim)) {
  case DimensionProblem::None:
    return success();
  case DimensionProblem::NeverPositive:
    return emitError() << "dimension '" << dim.str() << "' is not positive";
  case DimensionProblem::NotPositiveForAllSizes:
    return emitError() << "dimension '" << dim.str()
                       << "' is not positive for every size of "
                       << (dim.getTerms().size() == 1 ? "its symbol"
                                                      : "its symbols");
  case DimensionProblem::TooLarge:
    return emitError() << "dimension '" << dim.str()
                       << "' is too large: a dimension has at most "
                       << kMaxDimension << " elements";
  }
  return success();
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
