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

void CyclicContext::forward(const float *sequence, const int32_t *lengths,
                            int64_t T, int64_t B, const float *query,
                            int64_t rows, const int32_t *sentences,
                            Step &step, float *context, bool train) const {
  const int64_t H = outputWidth();
  step.T = T;
  step.rows = rows;
  step.rowLengths = lengths;
  const float *input = sequence;
  if (sentences) {
    gatherRows(sequence, T, B, layer.inputWidth(), sentences, rows,
               step.gathered);
    step.lengths.resize(rows);
    for (int64_t r = 0; r < rows; ++r)
      step.lengths[r] = lengths[sentences[r]];
    input = step.gathered.data();
    step.rowLengths = step.lengths.data();
  }
  step.initial.resize(rows * H);
  init.forward(query, rows, step.initial.data());
  tanhInPlace(step.initial.data(), rows * H);
  step.outputs.resize(T * rows * H);
  layer.forward({{input}, step.rowLengths, T, rows, {step.initial.data()},
                 step.outputs.data()},
                step.trace, train);
  if (pool == Pool::Mean) {
    meanOverTime(step.outputs.data(), step.rowLengths, rows, H, context);
    return;
  }
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(step.outputs.data() + ((step.rowLengths[r] - 1) * rows + r) * H,
                H, context + r * H);
}

void CyclicContext::backward(Step &step, const float *query,
                             const float *dContext, float *dSequence,
                             float *dQuery) const {
  const int64_t H = outputWidth(), rows = step.rows;
  std::vector<float> dOutputs(step.T * rows * H, 0.f);
  if (pool == Pool::Mean)
    meanOverTimeBackward(dContext, step.rowLengths, rows, H, dOutputs.data());
  else
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(dContext + r * H, H,
                  dOutputs.data() + ((step.rowLengths[r] - 1) * rows + r) * H);
  std::vector<float> dInitial(rows * H, 0.f);
  layer.backward(step.trace, dOutputs.data(), {dSequence}, {},
                 {dInitial.data()});
  tanhBackward(step.initial.data(), dInitial.data(), rows * H);
  init.backward(query, rows, dInitial.data(), dQuery, /*accumulateDx=*/false);
}

} // namespace models
