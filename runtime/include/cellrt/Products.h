//===- cellrt/Products.h - Watching a cell's matrix products ----*- C++ -*-===//
//
// For measuring what a program's cells multiply (bench/nmt-floor, issue
// #47): an observer sees every matrix product the cells run, with its
// shape, one call per logical product. Products that tiled steps absorb
// into their own kernels are not seen: a measuring run turns the tiles off
// (CELLRT_TILED_STEPS=0), and runs on one thread, where no product is split
// across threads.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_PRODUCTS_H
#define CELLRT_PRODUCTS_H

#include <cstdint>
#include <functional>

namespace cellrt {

/// One matrix product of a cell, 2·m·n·k flops.
struct ProductRecord {
  enum class Kind {
    Forward,       // OUT[m, n] = IN[m, k] · Wᵀ (W is [n, k])
    Backward,      // OUT[m, n] += IN[m, k] · W (W is [k, n])
    WeightGradient // dW[m, n] += dYᵀ[m, k] · X[k, n] (k: the rows summed)
  };
  Kind kind;
  int64_t m, n, k;
  /// By a weight packed once for oneDNN's matmul (decoding's few rows).
  bool packed = false;
};

using ProductObserver = std::function<void(const ProductRecord &)>;

/// Calls `observer` with every product any cell runs from now on, on the
/// thread that runs it; an empty observer stops. Not for use while cells
/// run on other threads.
void setProductObserver(ProductObserver observer);

namespace detail {
/// Whether an observer is set (one load on the products' path).
bool observingProducts();
void observeProduct(const ProductRecord &record);
} // namespace detail

} // namespace cellrt

#endif // CELLRT_PRODUCTS_H
