//===- runtime/Products.cpp - Watching a cell's matrix products -----------===//

#include "cellrt/Products.h"

#include <utility>

namespace {
cellrt::ProductObserver &theObserver() {
  static cellrt::ProductObserver observer;
  return observer;
}
bool observing = false;
} // namespace

void cellrt::setProductObserver(ProductObserver observer) {
  observing = bool(observer);
  theObserver() = std::move(observer);
}

bool cellrt::detail::observingProducts() { return observing; }

void cellrt::detail::observeProduct(const ProductRecord &record) {
  if (observing)
    theObserver()(record);
}
