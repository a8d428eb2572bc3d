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
  KeepRoundedOperands(const KeepRoundedOperands &) = delete;
  KeepRoundedOperands &operator=(const KeepRoundedOperands &) = delete;

private:
  bool keep;
};

} // namespace cellrt

#endif
