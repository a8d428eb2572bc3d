//===- ElementwiseRules.cpp - What each element-wise op computes ----------===//
//
// The rules of every element-wise op, op by op: its f32 value at one element
// (`emitScalar`, from which the kernels of both targets are built), its
// derivative (`emitAdjoints`, used by cell-derive-backward) and its value on
// numbers (`evaluate`, used to fold constants). A new function of the
// language is an op in CellOps.td and a section here.
//
//===----------------------------------------------------------------------===//

#include "ir/CellOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::cell;

#include "ir/CellInterfaces.cpp.inc"

std::optional<RegisteredOperationName>
mlir::cell::lookupLanguageFunction(MLIRContext &context, StringRef name) {
  context.getOrLoadDialect<CellDialect>();
  auto op = RegisteredOperationName::lookup(
      (CellDialect::getDialectNamespace() + "." + name).str(), &context);
  if (!op || !op->hasTrait<LanguageFunction>())
    return std::nullopt;
  return op;
}

std::vector<std::string>
mlir::cell::languageFunctionNames(MLIRContext &context) {
  context.getOrLoadDialect<CellDialect>();
  std::vector<std::string> names;
  for (RegisteredOperationName op : context.getRegisteredOperations())
    if (op.hasTrait<LanguageFunction>())
      names.push_back(op.stripDialect().str());
  llvm::sort(names);
  return names;
}

Value AdjointEmitter::constant(Type type, double value) {
  return builder.create<ConstantOp>(loc, type, builder.getF64FloatAttr(value));
}

Value AdjointEmitter::oneMinus(Value v) {
  return create<SubOp>(constant(v.getType(), 1.0), v);
}

namespace {
Value f32(OpBuilder &b, Location loc, double value) {
  return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(value));
}
} // namespace

//===----------------------------------------------------------------------===//
// Arithmetic: + - * / and unary minus
//===----------------------------------------------------------------------===//

Value AddOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  return b.create<arith::AddFOp>(loc, x[0], x[1]);
}
void AddOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  adjoints.accumulate(getLhs(), dy);
  adjoints.accumulate(getRhs(), dy);
}
double AddOp::evaluate(ArrayRef<double> x) { return x[0] + x[1]; }

Value SubOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  return b.create<arith::SubFOp>(loc, x[0], x[1]);
}
void SubOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  adjoints.accumulate(getLhs(), dy);
  adjoints.accumulate(getRhs(), adjoints.create<NegOp>(dy));
}
double SubOp::evaluate(ArrayRef<double> x) { return x[0] - x[1]; }

Value MulOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  return b.create<arith::MulFOp>(loc, x[0], x[1]);
}
void MulOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  adjoints.accumulate(getLhs(), adjoints.create<MulOp>(dy, getRhs()));
  adjoints.accumulate(getRhs(), adjoints.create<MulOp>(dy, getLhs()));
}
double MulOp::evaluate(ArrayRef<double> x) { return x[0] * x[1]; }

Value DivOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  return b.create<arith::DivFOp>(loc, x[0], x[1]);
}
void DivOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  // y = a / b: da = dy / b, db = -dy * y / b
  Value b = getRhs();
  adjoints.accumulate(getLhs(), adjoints.create<DivOp>(dy, b));
  adjoints.accumulate(
      b, adjoints.create<NegOp>(adjoints.create<DivOp>(
             adjoints.create<MulOp>(dy, y), b)));
}
double DivOp::evaluate(ArrayRef<double> x) { return x[0] / x[1]; }

Value NegOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  return b.create<arith::NegFOp>(loc, x[0]);
}
void NegOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  adjoints.accumulate(getOperand(), adjoints.create<NegOp>(dy));
}
double NegOp::evaluate(ArrayRef<double> x) { return -x[0]; }

//===----------------------------------------------------------------------===//
// Functions of the language
//===----------------------------------------------------------------------===//

Value SigmoidOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  Value e = b.create<math::ExpOp>(loc, b.create<arith::NegFOp>(loc, x[0]));
  Value denominator = b.create<arith::AddFOp>(loc, f32(b, loc, 1), e);
  return b.create<arith::DivFOp>(loc, f32(b, loc, 1), denominator);
}
void SigmoidOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  adjoints.accumulate(getOperand(),
                      adjoints.create<MulOp>(
                          dy, adjoints.create<MulOp>(y, adjoints.oneMinus(y))));
}
double SigmoidOp::evaluate(ArrayRef<double> x) {
  return 1 / (1 + std::exp(-x[0]));
}
bool SigmoidOp::isTranscendental() { return true; }

Value TanhOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  return b.create<math::TanhOp>(loc, x[0]);
}
void TanhOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  adjoints.accumulate(getOperand(),
                      adjoints.create<MulOp>(
                          dy, adjoints.oneMinus(adjoints.create<MulOp>(y, y))));
}
double TanhOp::evaluate(ArrayRef<double> x) { return std::tanh(x[0]); }
bool TanhOp::isTranscendental() { return true; }

Value ReluOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  return b.create<arith::MaxFOp>(loc, x[0], f32(b, loc, 0));
}
void ReluOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  adjoints.accumulate(getOperand(),
                      adjoints.create<MulOp>(
                          dy, adjoints.create<HeavisideOp>(getOperand())));
}
double ReluOp::evaluate(ArrayRef<double> x) { return x[0] > 0 ? x[0] : 0; }

Value ExpOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  return b.create<math::ExpOp>(loc, x[0]);
}
void ExpOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  adjoints.accumulate(getOperand(), adjoints.create<MulOp>(dy, y));
}
double ExpOp::evaluate(ArrayRef<double> x) { return std::exp(x[0]); }
bool ExpOp::isTranscendental() { return true; }

Value LogOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  return b.create<math::LogOp>(loc, x[0]);
}
void LogOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  adjoints.accumulate(getOperand(), adjoints.create<DivOp>(dy, getOperand()));
}
double LogOp::evaluate(ArrayRef<double> x) { return std::log(x[0]); }
bool LogOp::isTranscendental() { return true; }

Value SoftplusOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  // max(x, 0) + log1p(exp(-|x|)) never overflows.
  Value negAbs =
      b.create<arith::NegFOp>(loc, b.create<math::AbsFOp>(loc, x[0]));
  Value tail =
      b.create<math::Log1pOp>(loc, b.create<math::ExpOp>(loc, negAbs));
  return b.create<arith::AddFOp>(
      loc, b.create<arith::MaxFOp>(loc, x[0], f32(b, loc, 0)), tail);
}
void SoftplusOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  adjoints.accumulate(getOperand(),
                      adjoints.create<MulOp>(
                          dy, adjoints.create<SigmoidOp>(getOperand())));
}
double SoftplusOp::evaluate(ArrayRef<double> x) {
  return std::max(x[0], 0.0) + std::log1p(std::exp(-std::fabs(x[0])));
}
bool SoftplusOp::isTranscendental() { return true; }

Value HardsigmoidOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  Value line = b.create<arith::AddFOp>(
      loc, b.create<arith::MulFOp>(loc, x[0], f32(b, loc, 1.0 / 6)),
      f32(b, loc, 0.5));
  return b.create<arith::MinFOp>(
      loc, b.create<arith::MaxFOp>(loc, line, f32(b, loc, 0)),
      f32(b, loc, 1));
}
void HardsigmoidOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  // 1/6 inside (-3, 3), 0 outside: heaviside(x + 3) * heaviside(3 - x) / 6.
  Value x = getOperand();
  Type type = x.getType();
  Value inside = adjoints.create<MulOp>(
      adjoints.create<HeavisideOp>(
          adjoints.create<AddOp>(x, adjoints.constant(type, 3))),
      adjoints.create<HeavisideOp>(
          adjoints.create<SubOp>(adjoints.constant(type, 3), x)));
  adjoints.accumulate(
      x, adjoints.create<MulOp>(
             dy, adjoints.create<MulOp>(inside,
                                        adjoints.constant(type, 1.0 / 6))));
}
double HardsigmoidOp::evaluate(ArrayRef<double> x) {
  return std::min(std::max(x[0] / 6 + 0.5, 0.0), 1.0);
}

namespace {
/// sqrt(2/pi) and the cubic coefficient of GELU's tanh form.
constexpr double kGeluScale = 0.7978845608028654, kGeluCubic = 0.044715;
} // namespace

Value GeluOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  Value cube = b.create<arith::MulFOp>(
      loc, x[0], b.create<arith::MulFOp>(loc, x[0], x[0]));
  Value inner = b.create<arith::MulFOp>(
      loc, f32(b, loc, kGeluScale),
      b.create<arith::AddFOp>(
          loc, x[0],
          b.create<arith::MulFOp>(loc, f32(b, loc, kGeluCubic), cube)));
  Value onePlus = b.create<arith::AddFOp>(loc, f32(b, loc, 1),
                                          b.create<math::TanhOp>(loc, inner));
  return b.create<arith::MulFOp>(
      loc, b.create<arith::MulFOp>(loc, f32(b, loc, 0.5), x[0]), onePlus);
}
void GeluOp::emitAdjoints(AdjointEmitter &adjoints, Value y, Value dy) {
  // t = tanh(s (x + c x^3)):
  // d/dx = (1 + t) / 2 + x (1 - t^2) s (1 + 3 c x^2) / 2
  Value x = getOperand();
  Type type = x.getType();
  auto number = [&](double value) { return adjoints.constant(type, value); };
  Value square = adjoints.create<MulOp>(x, x);
  Value inner = adjoints.create<MulOp>(
      number(kGeluScale),
      adjoints.create<AddOp>(
          x, adjoints.create<MulOp>(number(kGeluCubic),
                                    adjoints.create<MulOp>(square, x))));
  Value t = adjoints.create<TanhOp>(inner);
  Value slope = adjoints.create<MulOp>(
      number(kGeluScale),
      adjoints.create<AddOp>(
          number(1), adjoints.create<MulOp>(number(3 * kGeluCubic), square)));
  Value derivative = adjoints.create<MulOp>(
      number(0.5),
      adjoints.create<AddOp>(
          adjoints.create<AddOp>(number(1), t),
          adjoints.create<MulOp>(
              x, adjoints.create<MulOp>(
                     adjoints.oneMinus(adjoints.create<MulOp>(t, t)),
                     slope))));
  adjoints.accumulate(x, adjoints.create<MulOp>(dy, derivative));
}
double GeluOp::evaluate(ArrayRef<double> x) {
  double v = x[0];
  return 0.5 * v * (1 + std::tanh(kGeluScale * (v + kGeluCubic * v * v * v)));
}
bool GeluOp::isTranscendental() { return true; }

//===----------------------------------------------------------------------===//
// Internal ops
//===----------------------------------------------------------------------===//

Value HeavisideOp::emitScalar(OpBuilder &b, Location loc, ValueRange x) {
  Value positive = b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OGT,
                                           x[0], f32(b, loc, 0));
  return b.create<arith::SelectOp>(loc, positive, f32(b, loc, 1),
                                   f32(b, loc, 0));
}
void HeavisideOp::emitAdjoints(AdjointEmitter &, Value, Value) {
  // A step function's derivative is zero wherever it is defined.
}
double HeavisideOp::evaluate(ArrayRef<double> x) { return x[0] > 0 ? 1 : 0; }
