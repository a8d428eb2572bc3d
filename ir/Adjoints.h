//===- Adjoints.h - The backward pass's side of derivative rules -*- C++ -*-===//
//
// ElementwiseMath::emitAdjoints writes an op's derivative through this: it
// creates cell ops at the backward kernel's insertion point and adds
// gradients to operands' adjoints. cell-derive-backward implements it.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_IR_ADJOINTS_H
#define CELLC_IR_ADJOINTS_H

#include "mlir/IR/Builders.h"

namespace mlir::cell {

class AdjointEmitter {
public:
  AdjointEmitter(OpBuilder &builder, Location loc)
      : builder(builder), loc(loc) {}
  virtual ~AdjointEmitter() = default;

  /// adjoint(operand) += gradient
  virtual void accumulate(Value operand, Value gradient) = 0;

  /// An op of the result type of `first`, e.g. create<MulOp>(dy, y).
  template <typename OpTy, typename... Args>
  Value create(Value first, Args... rest) {
    return builder.create<OpTy>(loc, first.getType(), first, rest...);
  }
  /// `value` broadcast to `type`.
  Value constant(Type type, double value);
  /// 1 - v
  Value oneMinus(Value v);

protected:
  OpBuilder &builder;
  Location loc;
};

} // namespace mlir::cell

#endif // CELLC_IR_ADJOINTS_H
