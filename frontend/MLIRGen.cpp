//===- MLIRGen.cpp - Checked AST to the cell dialect ----------------------===//
//
// Emits one `cell.cell` per cell. Its body block takes the inputs, states and
// params; each statement becomes ops at its source location, and the body
// ends in `cell.yield` with the next states and the output. Scalars never
// become values on their own: arithmetic on numbers is folded here, and a
// number meeting a vector becomes a `cell.constant` of the vector's type.
//
//===----------------------------------------------------------------------===//

#include "frontend/AST.h"
#include "frontend/Frontend.h"
#include "ir/CellDialect.h"
#include "ir/CellOps.h"
#include "ir/CellTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/Casting.h"

#include <cmath>

using namespace cellc;
using namespace cellc::ast;
using namespace mlir::cell;
using llvm::dyn_cast;

namespace {

/// The result of generating an expression: an SSA value, or a number that
/// was folded at compile time.
struct Generated {
  mlir::Value value;
  double number = 0;
  bool isNumber() const { return !value; }
};

/// Folds a built-in function applied to a number.
double foldBinary(char op, double lhs, double rhs) {
  switch (op) {
  case '+':
    return lhs + rhs;
  case '-':
    return lhs - rhs;
  case '*':
    return lhs * rhs;
  default:
    return lhs / rhs;
  }
}

class MLIRGenerator {
public:
  MLIRGenerator(mlir::MLIRContext &context, const std::string &fileName)
      : context(context), builder(&context), fileName(fileName) {}

  /// Appends the `cell.cell` of `cell` to the end of `block`; null (with an
  /// error) when a probe names no value of the cell.
  CellOp generateCell(const Cell &cell, mlir::Block &block,
                      llvm::ArrayRef<std::string> probes);

private:
  Generated generate(const Expr &expr);
  /// " x, h, p, ...": every vector value of the cell being generated.
  std::string vectorNames() const {
    std::string names;
    for (const auto &[name, symbol] : symbols)
      if (symbol.value && symbol.value.getType().isa<VecType>())
        names += (names.empty() ? " " : ", ") + name;
    return names;
  }
  /// Records each param's declared initialiser on the cell.
  void setParamInits(const Cell &cell, CellOp cellOp);
  mlir::Value appendProbes(const Cell &cell, CellOp cellOp,
                           mlir::Value output,
                           llvm::ArrayRef<std::string> probes);
  Generated generateUnary(const UnaryExpr &unary);
  Generated generateBinary(const BinaryExpr &binary);
  Generated generateCall(const CallExpr &call);
  void generateStmt(const Stmt &stmt);

  /// `generated` as a value of `type`, splatting a number.
  mlir::Value materialize(const Generated &generated, mlir::Type type,
                          Location loc);
  mlir::Type typeOf(const Shape &shape);
  mlir::Location toLoc(Location loc) {
    return mlir::FileLineColLoc::get(&context, fileName, loc.line, loc.col);
  }

  mlir::MLIRContext &context;
  mlir::OpBuilder builder;
  const std::string &fileName;
  /// Values by spelling: `x`, `h`, `h'`, `W`, locals.
  std::map<std::string, Generated> symbols;
};

mlir::Type MLIRGenerator::typeOf(const Shape &shape) {
  if (shape.isMatrix())
    return MatType::get(&context, shape.dims[0], shape.dims[1]);
  if (shape.isVector())
    return VecType::get(&context, shape.dims[0]);
  return {};
}

mlir::Value MLIRGenerator::materialize(const Generated &generated,
                                       mlir::Type type, Location loc) {
  if (!generated.isNumber())
    return generated.value;
  return builder.create<ConstantOp>(toLoc(loc), type,
                                    builder.getF64FloatAttr(generated.number));
}

CellOp MLIRGenerator::generateCell(const Cell &cell, mlir::Block &block,
                                   llvm::ArrayRef<std::string> probes) {
  std::vector<llvm::StringRef> inputNames, stateNames, paramNames;
  llvm::SmallVector<mlir::Type> argTypes;
  llvm::SmallVector<mlir::Location> argLocs;
  auto addArgs = [&](const std::vector<Decl> &decls,
                     std::vector<llvm::StringRef> &names) {
    for (const Decl &decl : decls) {
      names.push_back(decl.name);
      argTypes.push_back(typeOf(decl.shape));
      argLocs.push_back(toLoc(decl.loc));
    }
  };
  addArgs(cell.inputs, inputNames);
  addArgs(cell.states, stateNames);
  addArgs(cell.params, paramNames);

  std::string outputName = cell.outputs.empty()
                               ? cell.states.front().name + "'"
                               : cell.outputs.front().target.spelling();
  // CellOp::build creates the body block, which moves the builder's
  // insertion point into it; build the state and insert the op by hand.
  mlir::OperationState state(toLoc(cell.loc), CellOp::getOperationName());
  CellOp::build(builder, state, cell.name, inputNames, stateNames, paramNames,
                outputName, argTypes, argLocs);
  auto cellOp = llvm::cast<CellOp>(mlir::Operation::create(state));
  block.push_back(cellOp);
  setParamInits(cell, cellOp);
  mlir::Block *body = cellOp.getBodyBlock();
  builder.setInsertionPointToEnd(body);

  symbols.clear();
  unsigned argIndex = 0;
  for (const std::vector<Decl> *decls :
       {&cell.inputs, &cell.states, &cell.params})
    for (const Decl &decl : *decls)
      symbols[decl.name] = {body->getArgument(argIndex++)};

  for (const Stmt &stmt : cell.stmts)
    generateStmt(stmt);

  llvm::SmallVector<mlir::Value> yielded;
  for (const Decl &state : cell.states)
    yielded.push_back(symbols[state.name + "'"].value);
  Location outputLoc =
      cell.outputs.empty() ? cell.loc : cell.outputs.front().loc;
  mlir::Value output = materialize(
      symbols[outputName],
      yielded.empty() ? mlir::Type() : yielded.front().getType(), outputLoc);
  if (!probes.empty()) {
    output = appendProbes(cell, cellOp, output, probes);
    if (!output) {
      cellOp->erase();
      return nullptr;
    }
  }
  yielded.push_back(output);
  builder.create<YieldOp>(toLoc(outputLoc), yielded);
  return cellOp;
}

void MLIRGenerator::setParamInits(const Cell &cell, CellOp cellOp) {
  llvm::SmallVector<mlir::NamedAttribute> inits;
  for (const Decl &param : cell.params)
    if (param.init)
      inits.push_back(builder.getNamedAttr(
          param.name, InitAttr::get(&context, param.init->checked)));
  if (!inits.empty())
    cellOp.setParamInitsAttr(builder.getDictionaryAttr(inits));
}

/// The output followed by the probed values, concatenated: the kernels write
/// them all in one row, and the runtime splits it (cellc --probe). Records
/// the probes' names and lengths on the cell.
mlir::Value MLIRGenerator::appendProbes(const Cell &cell, CellOp cellOp,
                                        mlir::Value output,
                                        llvm::ArrayRef<std::string> probes) {
  llvm::SmallVector<mlir::Value> parts = {output};
  llvm::SmallVector<mlir::Attribute> names, lengths;
  for (const std::string &name : probes) {
    if (llvm::count(probes, name) > 1) {
      mlir::emitError(toLoc(cell.loc))
          << "--probe " << name << ": named more than once";
      return nullptr;
    }
    auto symbol = symbols.find(name);
    mlir::Value value =
        symbol == symbols.end() ? mlir::Value() : symbol->second.value;
    if (!value || !value.getType().isa<VecType>()) {
      auto diagnostic = mlir::emitError(toLoc(cell.loc)) << "--probe " << name
                                                         << ": ";
      if (symbol == symbols.end())
        diagnostic << "cell '" << cell.name << "' has no value named '"
                   << name << "'; its values are" << vectorNames();
      else if (!value)
        diagnostic << "'" << name << "' of cell '" << cell.name
                   << "' is a constant; there is nothing to probe";
      else
        diagnostic << "'" << name << "' of cell '" << cell.name
                   << "' is a matrix parameter, not a value of the step";
      return nullptr;
    }
    parts.push_back(value);
    names.push_back(builder.getStringAttr(name));
    lengths.push_back(DimExprAttr::get(&context, vecLength(value.getType())));
  }
  cellc::DimExpr total;
  for (mlir::Value part : parts)
    total = total + vecLength(part.getType());
  cellOp.setProbeNamesAttr(builder.getArrayAttr(names));
  cellOp.setProbeLengthsAttr(builder.getArrayAttr(lengths));
  return builder.create<ConcatOp>(toLoc(cell.loc),
                                  VecType::get(&context, total), parts);
}

void MLIRGenerator::generateStmt(const Stmt &stmt) {
  if (stmt.isSplit()) {
    const auto &call = llvm::cast<CallExpr>(*stmt.value);
    mlir::Value whole = materialize(generate(*call.args[0]),
                                    typeOf(call.args[0]->shape), call.loc);
    llvm::SmallVector<mlir::Type> partTypes;
    for (const Target &target : stmt.targets)
      partTypes.push_back(typeOf(target.shape));
    auto split = builder.create<SplitOp>(toLoc(call.loc), partTypes, whole);
    for (auto [target, part] : llvm::zip(stmt.targets, split.getResults()))
      symbols[target.spelling()] = {part};
    return;
  }
  const Target &target = stmt.targets.front();
  Generated value = generate(*stmt.value);
  // A state's next value must be a vector even when written as a number.
  if (target.primed)
    value = {materialize(value, typeOf(target.shape), stmt.value->loc)};
  symbols[target.spelling()] = value;
}

Generated MLIRGenerator::generate(const Expr &expr) {
  if (const auto *number = dyn_cast<NumberExpr>(&expr))
    return {mlir::Value(), number->value};
  if (const auto *name = dyn_cast<NameExpr>(&expr))
    return symbols[name->spelling()];
  if (const auto *unary = dyn_cast<UnaryExpr>(&expr))
    return generateUnary(*unary);
  if (const auto *binary = dyn_cast<BinaryExpr>(&expr))
    return generateBinary(*binary);
  if (const auto *matVec = dyn_cast<MatVecExpr>(&expr)) {
    mlir::Value matrix = generate(*matVec->matrix).value;
    mlir::Value vector = generate(*matVec->vector).value;
    return {builder.create<MatVecOp>(toLoc(expr.loc), typeOf(expr.shape),
                                     matrix, vector)};
  }
  return generateCall(llvm::cast<CallExpr>(expr));
}

Generated MLIRGenerator::generateUnary(const UnaryExpr &unary) {
  Generated operand = generate(*unary.operand);
  if (operand.isNumber())
    return {mlir::Value(), -operand.number};
  return {builder.create<NegOp>(toLoc(unary.loc), typeOf(unary.shape),
                                operand.value)};
}

Generated MLIRGenerator::generateBinary(const BinaryExpr &binary) {
  Generated lhs = generate(*binary.lhs);
  Generated rhs = generate(*binary.rhs);
  if (lhs.isNumber() && rhs.isNumber())
    return {mlir::Value(), foldBinary(binary.op, lhs.number, rhs.number)};
  mlir::Type type = typeOf(binary.shape);
  mlir::Value lhsValue = materialize(lhs, type, binary.lhs->loc);
  mlir::Value rhsValue = materialize(rhs, type, binary.rhs->loc);
  mlir::Location loc = toLoc(binary.loc);
  switch (binary.op) {
  case '+':
    return {builder.create<AddOp>(loc, type, lhsValue, rhsValue)};
  case '-':
    return {builder.create<SubOp>(loc, type, lhsValue, rhsValue)};
  case '*':
    return {builder.create<MulOp>(loc, type, lhsValue, rhsValue)};
  default:
    return {builder.create<DivOp>(loc, type, lhsValue, rhsValue)};
  }
}

Generated MLIRGenerator::generateCall(const CallExpr &call) {
  mlir::Location loc = toLoc(call.loc);
  mlir::Type type = typeOf(call.shape);
  if (call.callee == "concat") {
    llvm::SmallVector<mlir::Value> parts;
    for (const auto &arg : call.args)
      parts.push_back(generate(*arg).value);
    return {builder.create<ConcatOp>(loc, type, parts)};
  }
  if (call.callee == "layernorm") {
    mlir::Value normalized =
        builder.create<LayerNormOp>(loc, type, generate(*call.args[0]).value);
    if (call.args.size() == 3) {
      normalized = builder.create<MulOp>(loc, type, normalized,
                                         generate(*call.args[1]).value);
      normalized = builder.create<AddOp>(loc, type, normalized,
                                         generate(*call.args[2]).value);
    }
    return {normalized};
  }

  // An element-wise function: the op that implements it, found by name.
  auto function = lookupLanguageFunction(context, call.callee);
  assert(function && "Sema accepts only functions some op implements");
  Generated operand = generate(*call.args[0]);
  if (operand.isNumber())
    return {mlir::Value(),
            function->getInterface<ElementwiseMath>()->evaluate(
                {operand.number})};
  mlir::OperationState state(loc, *function);
  state.addOperands(operand.value);
  state.addTypes(type);
  return {builder.create(state)->getResult(0)};
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp>
cellc::generateCellIR(ParsedFile &file, mlir::MLIRContext &context,
                      llvm::StringRef cellName,
                      llvm::ArrayRef<std::string> probes) {
  context.getOrLoadDialect<CellDialect>();
  if (!file.module || !file.module->checked) {
    mlir::emitError(mlir::UnknownLoc::get(&context))
        << "generateCellIR needs a file that passed checkCellFile";
    return nullptr;
  }
  const Module &module = *file.module;
  mlir::OwningOpRef<mlir::ModuleOp> moduleOp = mlir::ModuleOp::create(
      mlir::FileLineColLoc::get(&context, module.fileName, 1, 1));
  MLIRGenerator generator(context, module.fileName);
  bool found = false;
  for (const Cell &cell : module.cells) {
    if (!cellName.empty() && cell.name != cellName)
      continue;
    found = true;
    if (!generator.generateCell(cell, *moduleOp->getBody(), probes))
      return nullptr;
  }
  if (!cellName.empty() && !found) {
    auto diagnostic =
        mlir::emitError(mlir::FileLineColLoc::get(&context, module.fileName,
                                                  1, 1))
        << "no cell named '" << cellName << "' in this file; it has";
    for (const Cell &cell : module.cells)
      diagnostic << " '" << cell.name << "'";
    return nullptr;
  }
  if (mlir::failed(mlir::verify(*moduleOp)))
    return nullptr;
  return moduleOp;
}
