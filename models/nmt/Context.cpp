//===- models/nmt/Context.cpp - The decoder's context c_j ----------------===//
//
// RNNSearch attends over the annotations (AdditiveAttention); Cseq2seq-I
// runs a cell over them from the query instead (CyclicContext). Training
// calls these once per target step for the whole batch, decoding once per
// step for the beam's rows.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/Model.h"

namespace nmt {

CyclicContext::Pool cyclicPool(const std::string &name) {
  if (name == "last")
    return CyclicContext::Pool::Last;
  if (name == "mean")
    return CyclicContext::Pool::Mean;
  throw DataError("--context: last or mean, not '" + name + "'");
}

int64_t Model::contextWidth() const { return decoder2.inputWidth(); }

void Model::contextForward(const float *query, int64_t rows,
                           const int32_t *sentences, ContextSlot &slot,
                           float *context, bool train) {
  if (attention) {
    attention->attend(keys, query, rows, sentences, slot.attention, context);
    return;
  }
  cyclic->forward(cyclicSource, query, rows, sentences, slot.cyclic, context,
                  train);
}

void Model::contextBackward(const float *query, ContextSlot &slot,
                            const float *dContext, float *dQuery,
                            float *dProjectedQuery) {
  // The weighted sum's part of dAnnotations waits for the end of the sweep
  // (decodeBackward: annotationsBackward), which writes each row once.
  if (attention)
    attention->backward(keys, query, slot.attention, dContext,
                        /*dAnn=*/nullptr, dQuery,
                        /*accumulateDQuery=*/false, dProjectedQuery);
  else
    cyclic->backward(cyclicSource, slot.cyclic, query, dContext, dQuery);
}

} // namespace nmt
