//===- cellrt/KeepRoundedOperands.h - Round bf16 operands once --*- C++ -*-===//
//
// A scope in which bf16 products round each operand once: the runtime's
// own backward pass uses it, and so do the drivers' layers, whose
// backward products (cellrt::multiply) read the same output gradient
// twice or more.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_KEEPROUNDEDOPERANDS_H
#define CELLRT_KEEPROUNDEDOPERANDS_H

#include <cstdint>

namespace cellrt {

/// While one is alive on a thread, the bf16 products it runs keep the
/// rounded copies of their operands and read an operand that lies within a
/// kept one (the same rows' stride) from that copy instead of rounding it
/// again: the same bits, one rounding pass fewer. For a run of products
/// whose operands nothing but those products writes meanwhile (a product's
/// own output drops the copies it overlaps): backward's products after the
/// steps, where LSTM's weight gradients and input gradient read the same
/// [T*B, 4H] gradient and inputs up to 4 times each (once per stacked
/// part), or a linear layer's weight and input gradients, which read the
/// same output gradient (an NMT output layer's is [rows, vocabulary]).
/// f32 products ignore it.
class KeepRoundedOperands {
public:
  explicit KeepRoundedOperands(bool keep);
  ~KeepRoundedOperands();

  /// Lends the scope a copy of the [rows, columns] operand at `source`
  /// (rows `stride` apart) that the caller rounded itself, dense, every
  /// value as cellrt::roundToBf16 rounds it: the scope's products read it
  /// instead of rounding the operand (an NMT loss writes its [rows,
  /// vocabulary] gradient in both precisions in one pass), until this
  /// scope ends, even inside an outer one. `rounded` must stay alive and
  /// unchanged while this scope does, and so must `source`'s values: a
  /// bf16 product that writes over `source` drops the copy, other writes
  /// are not seen. Nothing in an f32 scope (keep false).
  void lend(const float *source, int64_t rows, int64_t columns, int64_t stride,
            const uint16_t *rounded);
  KeepRoundedOperands(const KeepRoundedOperands &) = delete;
  KeepRoundedOperands &operator=(const KeepRoundedOperands &) = delete;

private:
  bool keep;
};

} // namespace cellrt

#endif
