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
// Every query re-reads the same sequence, so the cell's input products
// (W h_i, hoisted out of its time loop) are computed once per batch
// (precompute) and their backward run once after the batch's last query
// (sequenceBackward), through cellrt::Cell::withInputProducts. A cell that
// projects its input (CellLayer) reads the sequence itself each time.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_CYCLICCONTEXT_H
#define CELLC_MODELS_COMMON_CYCLICCONTEXT_H

#include "models/common/CellLayer.h"
#include "models/common/Linear.h"

#include <memory>
#include <string>
#include <vector>

namespace models {

class CyclicContext {
public:
  enum class Pool { Last, Mean };

  /// One batch's sequence, read by every query: the cell's input products
  /// and the gradients the queries' backward adds up.
  struct Sequence {
    const float *values = nullptr;
    const int32_t *lengths = nullptr;
    int64_t T = 0, B = 0;
    /// Per input of the layer's cell: its array [T, B, width] (a product,
    /// or `values`) and its gradient.
    std::vector<std::vector<float>> products, dInputs;
    std::vector<const float *> inputs;
  };

  /// What one forward keeps for its backward.
  struct Step {
    CellTrace trace;
    /// The initial state tanh(V q + b_0) [rows, H], the outputs
    /// [T, rows, H], and the rows' sequences and lengths when rows map to
    /// sequences (beam search).
    std::vector<float> initial, outputs;
    /// The squashed context [rows, H] (squashContext).
    std::vector<float> context;
    std::vector<std::vector<float>> gathered;
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
  /// The context becomes tanh of the pooled outputs: an ATR state is
  /// unbounded, and the decoder reads the context as it reads a layer.
  void squashContext() { squash = true; }

  /// Whether the input products are computed once per batch.
  bool sharesInputProducts() const { return productLayer != nullptr; }

  /// The batch's sequence [T, B, inputWidth] with lengths[B] (both alive
  /// while `out` is used).
  void precompute(const float *sequence, const int32_t *lengths, int64_t T,
                  int64_t B, Sequence &out) const;
  /// query [rows, queryWidth]: row r reads sequence sentences[r], or r when
  /// sentences is null (then rows = B). Writes context [rows, outputWidth()].
  void forward(const Sequence &sequence, const float *query, int64_t rows,
               const int32_t *sentences, Step &step, float *context,
               bool train) const;
  /// Backward of a training forward (sentences null): writes dQuery [rows,
  /// queryWidth], adds the sequence's gradient into `sequence`; the params'
  /// gradients accumulate.
  void backward(Sequence &sequence, Step &step, const float *query,
                const float *dContext, float *dQuery) const;
  /// After the batch's last backward: ADDS the sequence's gradient into
  /// dSequence [T, B, inputWidth].
  void sequenceBackward(Sequence &sequence, float *dSequence) const;

private:
  /// The derived cell's layer when the products are shared (else null).
  const CellLayer &running() const {
    return productLayer ? *productLayer : layer;
  }

  CellLayer layer;
  std::unique_ptr<cellrt::Cell> derived;
  std::vector<cellrt::InputProduct> products;
  std::unique_ptr<CellLayer> productLayer;
  Linear init;
  Pool pool;
  bool squash = false;
};

} // namespace models

#endif
