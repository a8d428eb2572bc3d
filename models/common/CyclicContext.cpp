//===- models/common/CyclicContext.cpp - A cell re-reading a sequence ----===//

#include "models/common/CyclicContext.h"

#include "models/common/Data.h"
#include "models/common/Math.h"
#include "models/common/Pooling.h"

#include <algorithm>

namespace models {

CyclicContext::CyclicContext(const cellrt::Cell &cell,
                             const std::string &prefix, int64_t queryWidth,
                             int64_t inputWidth, int64_t stateSize, Pool pool,
                             ParamStore &store)
    : CyclicContext(CellLayer(cell, prefix + ".cell", inputWidth, stateSize,
                              store),
                    prefix, queryWidth, pool, store) {}

CyclicContext::CyclicContext(CellLayer layer, const std::string &prefix,
                             int64_t queryWidth, Pool pool, ParamStore &store)
    : layer(std::move(layer)),
      init(store, prefix + ".V", queryWidth, this->layer.stateWidths()[0]),
      pool(pool) {
  if (this->layer.outputWidth() != this->layer.stateWidths()[0])
    throw DataError(prefix + ": the cell's output must be as wide as its "
                    "first state");
  if (this->layer.projectsAnInput())
    return; // the products would read the projection's output
  auto withProducts = this->layer.cell().withInputProducts(products);
  if (!withProducts || products.empty())
    return;
  derived = std::make_unique<cellrt::Cell>(std::move(*withProducts));
  productLayer = std::make_unique<CellLayer>(
      CellLayer::overInputProducts(this->layer, *derived));
}

namespace {

/// Row r's sequence: sequence[:, sentences[r]] into gathered [T, rows, C].
void gatherRows(const float *sequence, int64_t T, int64_t B, int64_t C,
                const int32_t *sentences, int64_t rows,
                std::vector<float> &gathered) {
  gathered.resize(T * rows * C);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(sequence + (t * B + sentences[r]) * C, C,
                  gathered.data() + (t * rows + r) * C);
}

} // namespace

void CyclicContext::precompute(const float *sequence, const int32_t *lengths,
                               int64_t T, int64_t B, Sequence &out) const {
  out.values = sequence;
  out.lengths = lengths;
  out.T = T;
  out.B = B;
  const size_t n = running().numInputs();
  out.products.assign(n, {});
  out.dInputs.assign(n, {});
  out.inputs.assign(n, sequence);
  for (size_t i = 0; productLayer && i < n; ++i) {
    const std::string &name = derived->getPlan().inputs[i].name;
    for (const cellrt::InputProduct &product : products)
      if (product.input == name) {
        out.products[i].resize(T * B * running().inputWidth(i));
        layer.productForward(product, sequence, T * B,
                             out.products[i].data());
        out.inputs[i] = out.products[i].data();
      }
  }
}

void CyclicContext::forward(const Sequence &sequence, const float *query,
                            int64_t rows, const int32_t *sentences,
                            Step &step, float *context, bool train) const {
  const int64_t H = outputWidth(), T = sequence.T;
  step.T = T;
  step.rows = rows;
  step.rowLengths = sequence.lengths;
  std::vector<const float *> inputs = sequence.inputs;
  if (sentences) {
    step.gathered.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      gatherRows(inputs[i], T, sequence.B, running().inputWidth(i),
                 sentences, rows, step.gathered[i]);
      inputs[i] = step.gathered[i].data();
    }
    step.lengths.resize(rows);
    for (int64_t r = 0; r < rows; ++r)
      step.lengths[r] = sequence.lengths[sentences[r]];
    step.rowLengths = step.lengths.data();
  }
  step.initial.resize(rows * H);
  init.forward(query, rows, step.initial.data());
  tanhInPlace(step.initial.data(), rows * H);
  step.outputs.resize(T * rows * H);
  running().forward({inputs, step.rowLengths, T, rows, {step.initial.data()},
                     step.outputs.data()},
                    step.trace, train);
  if (pool == Pool::Mean)
    meanOverTime(step.outputs.data(), step.rowLengths, rows, H, context);
  else
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(
          step.outputs.data() + ((step.rowLengths[r] - 1) * rows + r) * H, H,
          context + r * H);
  if (squash) {
    tanhInPlace(context, rows * H);
    step.context.assign(context, context + rows * H);
  }
}

void CyclicContext::backward(Sequence &sequence, Step &step,
                             const float *query, const float *dContext,
                             float *dQuery) const {
  const int64_t H = outputWidth(), rows = step.rows;
  std::vector<float> dOutputs(step.T * rows * H, 0.f), dPooled;
  if (squash) {
    dPooled.assign(dContext, dContext + rows * H);
    tanhBackward(step.context.data(), dPooled.data(), rows * H);
    dContext = dPooled.data();
  }
  if (pool == Pool::Mean)
    meanOverTimeBackward(dContext, step.rowLengths, rows, H, dOutputs.data());
  else
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(dContext + r * H, H,
                  dOutputs.data() + ((step.rowLengths[r] - 1) * rows + r) * H);
  std::vector<float *> dInputs;
  for (size_t i = 0; i < sequence.dInputs.size(); ++i) {
    std::vector<float> &gradient = sequence.dInputs[i];
    if (gradient.empty())
      gradient.assign(sequence.T * sequence.B * running().inputWidth(i), 0.f);
    dInputs.push_back(gradient.data());
  }
  std::vector<float> dInitial(rows * H, 0.f);
  running().backward(step.trace, dOutputs.data(), dInputs, {},
                     {dInitial.data()});
  tanhBackward(step.initial.data(), dInitial.data(), rows * H);
  init.backward(query, rows, dInitial.data(), dQuery, /*accumulateDx=*/false);
}

void CyclicContext::sequenceBackward(Sequence &sequence,
                                     float *dSequence) const {
  const int64_t rows = sequence.T * sequence.B;
  for (size_t i = 0; i < sequence.dInputs.size(); ++i) {
    const std::vector<float> &gradient = sequence.dInputs[i];
    if (gradient.empty())
      continue;
    if (sequence.products[i].empty()) {
      for (size_t k = 0; k < gradient.size(); ++k)
        dSequence[k] += gradient[k];
      continue;
    }
    for (const cellrt::InputProduct &product : products)
      if (product.input == derived->getPlan().inputs[i].name)
        layer.productBackward(product, sequence.values, rows, gradient.data(),
                              dSequence);
  }
}

} // namespace models
