//===- models/common/CyclicContext.h - A cell re-reading a sequence -*- C++ -*-===//
//
// Cseq2seq-I's replacement for attention (Zhang, Xiong, Su: "Cseq2seq:
// Cyclic Sequence-to-Sequence Learning", §3, Eq. 7): for each query q (a
// decoder state s~_j) a cell runs over the whole source sequence h_1..h_n
// from the initial state tanh(V q + b_0),
//   c_{j,i} = Cell(c_{j,i-1}, h_i),   c_{j,0} = tanh(V s~_j + b_0),
// and the context is its last output c_{j,n} (Pool::Last) or the mean of
// its outputs over the sequence's steps (Pool::Mean). Parameters PREFIX.V.*
// (a Linear) and the cell's PREFIX.cell.*; only the cell's first state is
// started from the query, any others from zeros.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_CYCLICCONTEXT_H
#define CELLC_MODELS_COMMON_CYCLICCONTEXT_H

#include "models/common/CellLayer.h"
#include "models/common/Linear.h"

#include <string>
#include <vector>

namespace models {

class CyclicContext {
public:
  enum class Pool { Last, Mean };

  /// What one forward keeps for its backward.
  struct Step {
    CellTrace trace;
    /// The initial state tanh(V q + b_0) [rows, H], the outputs
    /// [T, rows, H], and the rows' sequences and lengths when rows map to
    /// sequences (beam search).
    std::vector<float> initial, outputs, gathered;
    std::vector<int32_t> lengths;
    const int32_t *rowLengths = nullptr;
    int64_t T = 0, rows = 0;
  };

  /// Throws DataError when the cell's first state or output is not
  /// `stateSize` wide.
  CyclicContext(const cellrt::Cell &cell, const std::string &prefix,
                int64_t queryWidth, int64_t inputWidth, int64_t stateSize,
                Pool pool, ParamStore &store);
  /// Over a given layer (Cseq2seq-II: the encoder's cell, shared); only
  /// PREFIX.V.* is registered.
  CyclicContext(CellLayer layer, const std::string &prefix,
                int64_t queryWidth, Pool pool, ParamStore &store);

  int64_t outputWidth() const { return layer.outputWidth(); }
  CellLayer &cellLayer() { return layer; }

  /// sequence [T, B, inputWidth] (alive until backward) with lengths[B];
  /// query [rows, queryWidth]: row r reads sequence sentences[r], or r when
  /// sentences is null (then rows = B). Writes context [rows, outputWidth()].
  void forward(const float *sequence, const int32_t *lengths, int64_t T,
               int64_t B, const float *query, int64_t rows,
               const int32_t *sentences, Step &step, float *context,
               bool train) const;
  /// Backward of a training forward (sentences null): ADDS into dSequence
  /// [T, B, inputWidth] and writes dQuery [rows, queryWidth]; the params'
  /// gradients accumulate.
  void backward(Step &step, const float *query, const float *dContext,
                float *dSequence, float *dQuery) const;

private:
  CellLayer layer;
  Linear init;
  Pool pool;
};

} // namespace models

#endif
