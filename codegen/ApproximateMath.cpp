//===- ApproximateMath.cpp - Polynomial transcendental functions ----------===//

#include "codegen/Codegen.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::cell {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "codegen/Passes.h.inc"
} // namespace mlir::cell

using namespace mlir;

namespace {

/// exp(x) to about 1 ulp on float32, as Cephes' expf: x = k ln2 + r with
/// k = round(x / ln2) and ln2 split in two constants (the first exact in a
/// few bits) so that r is exact and |r| <= ln2 / 2; exp(r) = 1 + r + r^2 P(r)
/// with P of degree 5; times 2^k, built in two halves so that every k from
/// gradual underflow to overflow has a normal power of two. MLIR's own
/// approximation reduces by one rounded ln2 into [0, ln2) and is off by up
/// to ~20 ulp; through a chaotic recurrence (seed 4567 of the random-cell
/// tester: exp(-softplus(layernorm(h)))) that grew to 70x the error float32
/// itself costs. Same cost: one more multiply than MLIR's.
struct AccurateExp : OpRewritePattern<math::ExpOp> {
  explicit AccurateExp(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(math::ExpOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getType().isF32())
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto f32 = [&](float value) -> Value {
      return b.create<arith::ConstantOp>(b.getF32FloatAttr(value));
    };
    auto i32 = [&](int32_t value) -> Value {
      return b.create<arith::ConstantOp>(b.getI32IntegerAttr(value));
    };
    auto fma = [&](Value x, Value y, Value z) -> Value {
      return b.create<math::FmaOp>(x, y, z);
    };
    Value x = op.getOperand();
    // Past these exp(x) is inf or 0 anyway; k stays in range.
    auto clampTo = [&](arith::CmpFPredicate beyond, float bound, Value v) {
      Value limit = f32(bound);
      return b.create<arith::SelectOp>(b.create<arith::CmpFOp>(beyond, v, limit),
                                       limit, v);
    };
    Value clamped = clampTo(arith::CmpFPredicate::OGT, 88.8f,
                            clampTo(arith::CmpFPredicate::OLT, -104.0f, x));
    Value k = b.create<math::FloorOp>(
        fma(clamped, f32(1.44269504088896341f), f32(0.5f)));
    Value r = fma(k, f32(-0.693359375f), clamped);
    r = fma(k, f32(2.12194440e-4f), r);
    Value p = f32(1.9875691500e-4f);
    for (float coefficient : {1.3981999507e-3f, 8.3334519073e-3f,
                              4.1665795894e-2f, 1.6666665459e-1f,
                              5.0000001201e-1f})
      p = fma(p, r, f32(coefficient));
    Value r2 = b.create<arith::MulFOp>(r, r);
    Value y = b.create<arith::AddFOp>(fma(p, r2, r), f32(1.0f));
    // 2^k = 2^(k - k/2) * 2^(k/2): each half is a normal float.
    Value n = b.create<arith::FPToSIOp>(b.getI32Type(), k);
    Value half = b.create<arith::ShRSIOp>(n, i32(1));
    auto powerOfTwo = [&](Value exponent) -> Value {
      Value bits = b.create<arith::ShLIOp>(
          b.create<arith::AddIOp>(exponent, i32(127)), i32(23));
      return b.create<arith::BitcastOp>(b.getF32Type(), bits);
    };
    Value result = b.create<arith::MulFOp>(
        b.create<arith::MulFOp>(y, powerOfTwo(half)),
        powerOfTwo(b.create<arith::SubIOp>(n, half)));
    // NaN stays NaN (the clamps and the conversion do not keep it).
    Value isNaN =
        b.create<arith::CmpFOp>(arith::CmpFPredicate::UNO, x, x);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, isNaN, x, result);
    return success();
  }
};

struct ApproximateMathPass
    : cell::impl::ApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AccurateExp>(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(getOperation(),
                                            std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
