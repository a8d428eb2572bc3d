//===- models/common/CellLayer.h - A compiled cell as a layer ---*- C++ -*-===//
//
// Binds a cellrt::Cell (compiled by cellc, AOT or JIT) to concrete sizes and
// runs it over padded, time-major batches, forward and backward:
//   - every state gets `stateSize` (the cell's state dims are bound first);
//   - input k gets inputWidths[k]; where the cell fixes that input's width
//     otherwise (SRU's `x: [H]` with a 2H-wide context), a Linear projection
//     without bias (`PREFIX.proj_NAME`) maps the given width to the cell's;
//   - a model gives a layer its sources (a CA layer's x and backward state,
//     a decoder layer's state below and context): a cell with as many
//     inputs reads them separately, a cell with one input reads their
//     concatenation (joined per row here);
//   - the cell's params become model Params named `PREFIX.NAME`.
// A layer runs in one direction; SequenceEncoder (Recurrent.h) stacks them
// and runs both directions. A decoder runs a layer one step at a time:
// while training, as length-1 sequences through forward() (one CellTrace
// per step, each starting from the previous step's final states); while
// decoding, through step(), whose rows can start from any rows of the
// previous states (a beam's parents).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_CELLLAYER_H
#define CELLC_MODELS_COMMON_CELLLAYER_H

#include "models/common/Linear.h"
#include "models/common/Param.h"

#include "cellrt/Runtime.h"

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace models {

/// One batch of sequences for CellLayer::forward. The arrays must stay alive
/// and unchanged until backward.
struct CellSequence {
  /// One per cell input, [T, B, inputWidth(k)].
  std::vector<const float *> inputs;
  /// B lengths, 1 <= lengths[b] <= T.
  const int32_t *lengths = nullptr;
  int64_t T = 0, B = 0;
  /// One per state, [B, stateWidths()[k]]; empty or null entries: zeros.
  std::vector<const float *> initialStates;
  /// [T, B, outputWidth()]; zeros at padded steps.
  float *output = nullptr;
  /// Optional: packWeights() of the layer's current params, so that the
  /// call does not stack them again (a decoder trained one step at a time
  /// calls forward at every step). When training, keep it alive and the
  /// params unchanged until backward.
  const cellrt::PackedWeights *packed = nullptr;
};

/// What one forward keeps for backward; the caller owns one per use of the
/// layer (a layer can run at many places of a model).
struct CellTrace {
  cellrt::ForwardArgs args;
  cellrt::Tape tape;
  /// Each state after each sequence's last step, [B, width].
  std::vector<std::vector<float>> finalStates;
  /// The projected inputs (empty where input k is not projected), and the
  /// joined sources of a one-input cell given several.
  std::vector<std::vector<float>> projected;
  std::vector<float> joined;
  std::vector<const float *> rawInputs;
  int64_t T = 0, B = 0;

  /// finalStates as the next forward's initialStates: a decoder's next
  /// step, or an encoder that continues another.
  std::vector<const float *> finalStatePointers() const;
};

/// One inference step of a batch of rows for CellLayer::step. The arrays
/// are the caller's.
struct CellStep {
  /// One per cell input, [rows, inputWidth(k)].
  std::vector<const float *> inputs;
  int64_t rows = 0;
  /// One per state, [stateRows, stateWidths()[k]]; empty or null entries:
  /// zeros.
  std::vector<const float *> states;
  int64_t stateRows = 0;
  /// When set, row r starts from row sourceRows[r] of `states` (beam
  /// search); else from row r.
  const int32_t *sourceRows = nullptr;
  /// One per state, [rows, stateWidths()[k]]: the states after the step;
  /// they may not alias `states`.
  std::vector<float *> nextStates;
  /// [rows, outputWidth()].
  float *output = nullptr;
};

/// What a layer's inference forwards record of a cell's probes (cellc
/// --probe; nmt analyze).
struct ProbeRecorder {
  /// The layer's cell compiled with probes (models::loadProbedCell): same
  /// params and results, run instead of the layer's own cell while
  /// recording.
  const cellrt::Cell *probed = nullptr;
  struct Call {
    int64_t T = 0, B = 0;
    /// One [T, B, len] array per probe of `probed`, in plan order.
    std::vector<std::vector<float>> probes;
  };
  std::vector<Call> calls;
};

class CellLayer {
public:
  /// Throws DataError naming the cell and the mismatch when the cell cannot
  /// take these widths.
  CellLayer(const cellrt::Cell &cell, const std::string &prefix,
            const std::vector<int64_t> &inputWidths, int64_t stateSize,
            ParamStore &store, bool reverse = false);
  /// One source.
  CellLayer(const cellrt::Cell &cell, const std::string &prefix,
            int64_t inputSize, int64_t stateSize, ParamStore &store,
            bool reverse = false);
  /// A layer that shares every param (and projection) of `owner`, running
  /// in direction `reverse`: its gradients add to the owner's, and the
  /// store counts the params once (Cseq2seq's encoder run both ways, its
  /// SGRU sharing of encoder and decoder cells). `owner` must outlive it.
  static CellLayer sharing(const CellLayer &owner, bool reverse);
  /// A layer over `derived` (owner.cell().withInputProducts(products)) with
  /// the owner's params: its inputs are the derived cell's (a kept input at
  /// the owner's width, a product at its weight's rows). Throws DataError
  /// when the owner projects an input. `owner` and `derived` must outlive it.
  static CellLayer overInputProducts(const CellLayer &owner,
                                     const cellrt::Cell &derived);
  /// out [rows, weight rows] = source [rows, cols] W^T for `product`, W the
  /// params of its weight stacked.
  void productForward(const cellrt::InputProduct &product, const float *source,
                      int64_t rows, float *out) const;
  /// Given dOut: the weight's params' gradients accumulate, dSource (when
  /// given) += dOut W.
  void productBackward(const cellrt::InputProduct &product, const float *source,
                       int64_t rows, const float *dOut, float *dSource) const;

  const cellrt::Cell &cell() const { return *impl; }
  size_t numInputs() const { return sources.size(); }
  /// The width the caller gives input k (before any joining or projection).
  int64_t inputWidth(size_t k = 0) const { return sources[k]; }
  int64_t outputWidth() const { return output; }
  const std::vector<int64_t> &stateWidths() const { return states; }
  bool isReverse() const { return reverse; }
  /// The projection in front of input k, or nullptr.
  const Linear *projection(size_t k) const { return projections[k].get(); }
  /// Whether any of the cell's inputs is projected.
  bool projectsAnInput() const {
    for (const auto &projection : projections)
      if (projection)
        return true;
    return false;
  }
  /// The cell's own params by plan name (not the projections').
  std::map<std::string, cellrt::ConstArray> paramArrays() const;
  std::map<std::string, cellrt::MutableArray> gradArrays() const;
  const std::vector<Param *> &getParams() const { return params; }

  /// Runs the whole batch (backwards in time when the layer is reversed).
  /// With `train` the trace can be backpropagated.
  void forward(const CellSequence &sequence, CellTrace &trace,
               bool train) const;
  /// Backpropagates a training forward. dOutput [T, B, out] may be null;
  /// dFinalStates / dInitialStates have an entry per state or are empty
  /// (null entries: zero / not wanted). ACCUMULATES into dInputs[k] (null:
  /// not wanted), dInitialStates and the params' gradients.
  void backward(CellTrace &trace, const float *dOutput,
                const std::vector<float *> &dInputs,
                const std::vector<const float *> &dFinalStates = {},
                const std::vector<float *> &dInitialStates = {}) const;

  /// From now on inference forwards run recorder->probed and append its
  /// probes to recorder->calls; null: the layer's own cell, nothing
  /// recorded. Throws DataError when the probed cell's params differ. The
  /// recorder must outlive the forwards.
  void setProbeRecorder(ProbeRecorder *recorder);

  /// The cell's weights stacked once for step() and forward(); with
  /// PackFor::Training, in bf16, also packed for backward() (see
  /// cellrt::Cell::packWeights); valid while the params keep their values
  /// and addresses (one decoding pass, one update).
  cellrt::PackedWeights
  packWeights(cellrt::PackFor purpose = cellrt::PackFor::Inference) const;
  /// One inference step (no backward). `packed` is packWeights()' result,
  /// or null to stack the weights in this call.
  void step(const CellStep &step, const cellrt::PackedWeights *packed) const;

private:
  /// The params stacked in `weight`, and their total rows and columns.
  std::vector<Param *> weightParams(const std::string &weight, int64_t &rows,
                                    int64_t &cols) const;
  /// Points `args` at a new call's probe arrays in `recorder`.
  void addProbeArrays(cellrt::ForwardArgs &args, int64_t T, int64_t B) const;
  void bindWidths(const std::vector<int64_t> &inputWidths, int64_t stateSize,
                  const std::string &prefix, ParamStore &store);
  const float *cellInput(const CellSequence &sequence, CellTrace &trace,
                         size_t k) const;
  /// The sources' rows side by side into `joined` [rows, sum of widths].
  void joinSources(const std::vector<const float *> &given, int64_t rows,
                   std::vector<float> &joined) const;
  void forwardJoined(const CellSequence &sequence, CellTrace &trace,
                     bool train) const;

  const cellrt::Cell *impl;
  bool reverse;
  std::string what;
  /// The caller's widths; the cell's inputs before and after projection
  /// (with joined sources, one input of their summed width).
  std::vector<int64_t> sources, inputs, cellInputs;
  bool joined = false;
  int64_t output = 0;
  std::vector<int64_t> states;
  std::vector<std::shared_ptr<Linear>> projections;
  std::vector<std::string> names;
  std::vector<Param *> params;
  /// The plan's dims as bound to the widths.
  std::map<std::string, int64_t> boundDims;
  ProbeRecorder *recorder = nullptr;
};

/// A cellrt call failed (bad shapes, lengths, sizes): the message names the
/// call and says why.
struct CellRuntimeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws CellRuntimeError with the message when a runtime call failed.
void check(const cellrt::Status &status, const char *what);

} // namespace models

#endif
