//===- Schedule.cpp - The schedule dialect --------------------------------===//
//
// The dialect's registration, the reference attribute's syntax, and the
// program's verifier: the program converts to the runtime's plan, which
// the runtime's own rules check (the rules exist once, in runtime/Plan.cpp).
//
//===----------------------------------------------------------------------===//

#include "schedule/Schedule.h"
#include "ir/CellDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::sched;

#include "schedule/ScheduleDialect.cpp.inc"
#include "schedule/ScheduleEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "schedule/ScheduleAttributes.cpp.inc"

#define GET_OP_CLASSES
#include "schedule/ScheduleOps.cpp.inc"

void ScheduleDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "schedule/ScheduleOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "schedule/ScheduleAttributes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// #sched.ref<kind @name + "column">
//===----------------------------------------------------------------------===//

Attribute RefAttr::parse(AsmParser &parser, Type) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<RefKind> kind = symbolizeRefKind(keyword);
  if (!kind) {
    parser.emitError(loc) << "unknown reference kind '" << keyword << "'";
    return {};
  }
  FlatSymbolRefAttr target;
  StringAttr name;
  if (succeeded(parser.parseOptionalSymbolName(name)))
    target = FlatSymbolRefAttr::get(name);
  cellc::DimExpr column;
  if (succeeded(parser.parseOptionalPlus())) {
    FailureOr<cellc::DimExpr> parsed = cell::parseDimExpr(parser);
    if (failed(parsed))
      return {};
    column = *parsed;
  }
  if (parser.parseGreater())
    return {};
  return RefAttr::get(parser.getContext(), *kind, target, column);
}

void RefAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyRefKind(getKind());
  if (getTarget())
    printer << ' ' << getTarget();
  if (getColumn() != cellc::DimExpr()) {
    printer << " + ";
    cell::printDimExpr(printer, getColumn());
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// The program
//===----------------------------------------------------------------------===//

void ProgramOp::build(OpBuilder &builder, OperationState &state, StringRef cell,
                      ArrayRef<std::string> dims,
                      const cellc::DimExpr &outputWidth) {
  SmallVector<StringRef> names(dims.begin(), dims.end());
  state.addAttribute(getCellAttrName(state.name), builder.getStringAttr(cell));
  state.addAttribute(getDimsAttrName(state.name),
                     builder.getStrArrayAttr(names));
  state.addAttribute(getOutputWidthAttrName(state.name),
                     cell::DimExprAttr::get(builder.getContext(), outputWidth));
  state.addRegion()->emplaceBlock();
}

namespace {

/// Whether `name` reads back from the plan's text as itself: one token
/// with no `:` or `+`, which split a reference (`seq:v0+H` is buffer `v0`
/// at column H). Names from cells may carry primes (a probe `h'`).
bool isPlainName(StringRef name) {
  return !name.empty() && llvm::none_of(name, [](char c) {
    return isspace(static_cast<unsigned char>(c)) || c == ':' || c == '+';
  });
}

/// The references and symbol names in `attr` (a schedule op's attribute).
void collectNames(Attribute attr, SmallVectorImpl<RefAttr> &refs,
                  SmallVectorImpl<StringRef> &symbols) {
  if (auto ref = attr.dyn_cast<RefAttr>())
    refs.push_back(ref);
  else if (auto symbol = attr.dyn_cast<FlatSymbolRefAttr>())
    symbols.push_back(symbol.getValue());
  else if (auto array = attr.dyn_cast<ArrayAttr>())
    for (Attribute element : array)
      collectNames(element, refs, symbols);
}

/// What the plan's text cannot say: foreign ops, names it would split,
/// `out` and `dout` naming something or other kinds nothing.
LogicalResult verifyPlanSyntax(ProgramOp program) {
  for (Operation &op : program.getBody().front()) {
    if (op.getDialect() != program->getDialect())
      return op.emitOpError("is not part of a schedule");
    if (auto name = op.getAttrOfType<StringAttr>("sym_name"))
      if (!isPlainName(name.getValue()))
        return op.emitOpError("name '")
               << name.getValue() << "' cannot be written in a plan";
    for (NamedAttribute attr : op.getAttrs()) {
      SmallVector<RefAttr> refs;
      SmallVector<StringRef> symbols;
      collectNames(attr.getValue(), refs, symbols);
      for (StringRef symbol : symbols)
        if (!isPlainName(symbol))
          return op.emitOpError("name '")
                 << symbol << "' cannot be written in a plan";
      for (RefAttr ref : refs) {
        bool named =
            ref.getKind() != RefKind::Out && ref.getKind() != RefKind::Dout;
        if (named != bool(ref.getTarget()))
          return op.emitOpError("reference ")
                 << ref << (named ? " needs a name" : " names nothing");
        if (named && !isPlainName(ref.getTarget().getValue()))
          return op.emitOpError("reference ")
                 << ref << " names something a plan cannot write";
      }
    }
  }
  return success();
}

} // namespace

LogicalResult ProgramOp::verifyRegions() {
  if (getPrecision() && !cellrt::parsePrecision(getPrecision()->str()))
    return emitOpError("precision must be \"f32\" or \"bf16\", got \"")
           << *getPrecision() << "\"";
  if (failed(verifyPlanSyntax(*this)))
    return failure();
  return failed(checkedPlan(*this)) ? failure() : success();
}
