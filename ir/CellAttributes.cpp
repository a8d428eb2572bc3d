//===- CellAttributes.cpp - Attributes of the cell dialect ----------------===//

#include "ir/CellAttributes.h"
#include "ir/CellDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/bit.h"

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

llvm::hash_code cellrt::hash_value(const InitScheme &scheme) {
  return llvm::hash_combine(static_cast<int>(scheme.kind),
                            llvm::bit_cast<uint64_t>(scheme.value));
}

FailureOr<cellrt::InitScheme> mlir::cell::parseInitScheme(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (failed(parser.parseKeywordOrString(&name)))
    return failure();
  std::optional<cellrt::InitScheme::Kind> kind = cellrt::parseInitKind(name);
  if (!kind || *kind == cellrt::InitScheme::Kind::None) {
    parser.emitError(loc) << "unknown initialiser '" << name
                          << "'; expected constant, uniform, normal, "
                             "orthogonal, fan_in or fan_out";
    return failure();
  }
  cellrt::InitScheme scheme{*kind, 0};
  if (cellrt::initKindTakesValue(*kind) && parser.parseFloat(scheme.value))
    return failure();
  return scheme;
}

void mlir::cell::printInitScheme(AsmPrinter &printer,
                                 const cellrt::InitScheme &scheme) {
  printer << cellrt::initKindName(scheme.kind);
  if (cellrt::initKindTakesValue(scheme.kind))
    printer << ' ' << APFloat(scheme.value);
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               cellrt::InitScheme scheme) {
  if (scheme.isNone())
    return emitError() << "an initialiser must name a scheme";
  if (std::string problem = cellrt::checkInitValue(scheme); !problem.empty())
    return emitError() << problem;
  return success();
}

LogicalResult
mlir::cell::verifyParamInit(function_ref<InFlightDiagnostic()> emitError,
                            StringRef name, Attribute init, size_t rank) {
  auto initAttr = init.dyn_cast<InitAttr>();
  if (!initAttr)
    return emitError() << "the initialiser of param '" << name
                       << "' must be a #cell.init, got " << init;
  std::string problem = cellrt::checkInitRank(initAttr.getScheme(), rank);
  if (!problem.empty())
    return emitError() << "param '" << name << "': " << problem;
  return success();
}

#define GET_ATTRDEF_CLASSES
#include "ir/CellAttributes.cpp.inc"

void CellDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/CellAttributes.cpp.inc"
      >();
}
