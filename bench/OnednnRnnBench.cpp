//===- OnednnRnnBench.cpp - oneDNN's own RNN primitives -------------------===//
//
// oneDNN 2.6's LSTM, GRU and linear-before-reset GRU primitives, one layer,
// one direction, f32, time-major [T, B, C]. oneDNN's vanilla GRU computes
// exactly cells/gru.cell (the reset gate multiplies h before Uh; h' = z*h +
// (1-z)*c); LBR GRU is the cuDNN/PyTorch variant (r * (Uh h + b)).
//
// Best settings: primitives and descriptors are created once; the weights
// use `format_tag::any`, so oneDNN picks its preferred layouts, and are
// reordered into them once outside the timing for inference. In training the
// timed iteration is forward_training + (when backward wants another weight
// layout than forward) the weight reorders into the backward layouts +
// backward; the gradients stay in oneDNN's layouts. Initial states are zero
// arrays, the final-state gradients zero.
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <unordered_map>

using namespace cellc_bench;
using namespace dnnl;

namespace {

enum class Kind { Lstm, Gru, LbrGru };

using tag = memory::format_tag;
using dt = memory::data_type;

class OnednnRunner : public Runner {
public:
  OnednnRunner(Kind kind, const Workload &w)
      : w(w), eng(engine::kind::cpu, 0), strm(eng) {
    int64_t gates = kind == Kind::Lstm ? 4 : 3;
    int64_t biasGates = kind == Kind::LbrGru ? 4 : gates;
    bool lstm = kind == Kind::Lstm;
    bool training = w.mode == Mode::Training;
    prop_kind fwdProp =
        training ? prop_kind::forward_training : prop_kind::forward_inference;
    auto dir = rnn_direction::unidirectional_left2right;

    memory::desc srcLayer({w.T, w.B, w.I}, dt::f32, tag::tnc);
    memory::desc dstLayer({w.T, w.B, w.H}, dt::f32, tag::tnc);
    memory::desc iterMd({1, 1, w.B, w.H}, dt::f32, tag::ldnc);
    memory::desc userWl({1, 1, w.I, gates, w.H}, dt::f32, tag::ldigo);
    memory::desc userWi({1, 1, w.H, gates, w.H}, dt::f32, tag::ldigo);
    memory::desc anyWl({1, 1, w.I, gates, w.H}, dt::f32, tag::any);
    memory::desc anyWi({1, 1, w.H, gates, w.H}, dt::f32, tag::any);
    memory::desc biasMd({1, 1, biasGates, w.H}, dt::f32, tag::ldgo);
    memory::desc noC;

    float scale = 1.0f / std::sqrt(static_cast<float>(w.H));
    uint32_t seed = 200;
    auto make = [&](const memory::desc &md, float s) {
      memory m(md, eng);
      size_t count = md.get_size() / sizeof(float);
      fillRandom(static_cast<float *>(m.get_data_handle()), count, s, seed++);
      return m;
    };
    auto zeros = [&](const memory::desc &md) {
      memory m(md, eng);
      std::memset(m.get_data_handle(), 0, md.get_size());
      return m;
    };

    memory src = make(srcLayer, 1.0f), dst = zeros(dstLayer);
    memory wl = make(userWl, scale), wi = make(userWi, scale);
    memory bias = make(biasMd, scale);
    memory srcIter = zeros(iterMd), dstIter = zeros(iterMd);
    memory srcIterC = zeros(iterMd), dstIterC = zeros(iterMd);

    // Forward.
    memory::desc fwdWl, fwdWi, wsMd;
    lstm_forward::primitive_desc lstmPd;
    gru_forward::primitive_desc gruPd;
    lbr_gru_forward::primitive_desc lbrPd;
    if (lstm) {
      auto &pd = lstmPd = lstm_forward::primitive_desc(
          lstm_forward::desc(fwdProp, dir, srcLayer, iterMd, iterMd, anyWl,
                             anyWi, biasMd, dstLayer, iterMd, iterMd),
          eng);
      fwd = lstm_forward(pd);
      fwdWl = pd.weights_layer_desc();
      fwdWi = pd.weights_iter_desc();
      wsMd = pd.workspace_desc();
    } else if (kind == Kind::Gru) {
      auto &pd = gruPd = gru_forward::primitive_desc(
          gru_forward::desc(fwdProp, dir, srcLayer, iterMd, anyWl, anyWi,
                            biasMd, dstLayer, iterMd),
          eng);
      fwd = gru_forward(pd);
      fwdWl = pd.weights_layer_desc();
      fwdWi = pd.weights_iter_desc();
      wsMd = pd.workspace_desc();
    } else {
      auto &pd = lbrPd = lbr_gru_forward::primitive_desc(
          lbr_gru_forward::desc(fwdProp, dir, srcLayer, iterMd, anyWl, anyWi,
                                biasMd, dstLayer, iterMd),
          eng);
      fwd = lbr_gru_forward(pd);
      fwdWl = pd.weights_layer_desc();
      fwdWi = pd.weights_iter_desc();
      wsMd = pd.workspace_desc();
    }
    memory fwl(fwdWl, eng), fwi(fwdWi, eng);
    reorder(wl, fwl).execute(strm, wl, fwl);
    reorder(wi, fwi).execute(strm, wi, fwi);
    strm.wait();
    fwdArgs = {{DNNL_ARG_SRC_LAYER, src},    {DNNL_ARG_SRC_ITER, srcIter},
               {DNNL_ARG_WEIGHTS_LAYER, fwl}, {DNNL_ARG_WEIGHTS_ITER, fwi},
               {DNNL_ARG_BIAS, bias},         {DNNL_ARG_DST_LAYER, dst},
               {DNNL_ARG_DST_ITER, dstIter}};
    if (lstm) {
      fwdArgs[DNNL_ARG_SRC_ITER_C] = srcIterC;
      fwdArgs[DNNL_ARG_DST_ITER_C] = dstIterC;
    }
    if (!training)
      return;
    memory workspace(wsMd, eng);
    fwdArgs[DNNL_ARG_WORKSPACE] = workspace;

    // Backward: diff arrays in plain layouts, weights and their gradients in
    // whatever oneDNN prefers.
    memory::desc bwdWl, bwdWi, dWl, dWi;
    if (lstm) {
      lstm_backward::primitive_desc pd(
          lstm_backward::desc(prop_kind::backward, dir, srcLayer, iterMd,
                              iterMd, anyWl, anyWi, biasMd, dstLayer, iterMd,
                              iterMd, srcLayer, iterMd, iterMd, anyWl, anyWi,
                              biasMd, dstLayer, iterMd, iterMd),
          eng, lstmPd);
      bwd = lstm_backward(pd);
      bwdWl = pd.weights_layer_desc();
      bwdWi = pd.weights_iter_desc();
      dWl = pd.diff_weights_layer_desc();
      dWi = pd.diff_weights_iter_desc();
    } else if (kind == Kind::Gru) {
      gru_backward::primitive_desc pd(
          gru_backward::desc(prop_kind::backward, dir, srcLayer, iterMd, anyWl,
                             anyWi, biasMd, dstLayer, iterMd, srcLayer, iterMd,
                             anyWl, anyWi, biasMd, dstLayer, iterMd),
          eng, gruPd);
      bwd = gru_backward(pd);
      bwdWl = pd.weights_layer_desc();
      bwdWi = pd.weights_iter_desc();
      dWl = pd.diff_weights_layer_desc();
      dWi = pd.diff_weights_iter_desc();
    } else {
      lbr_gru_backward::primitive_desc pd(
          lbr_gru_backward::desc(prop_kind::backward, dir, srcLayer, iterMd,
                                 anyWl, anyWi, biasMd, dstLayer, iterMd,
                                 srcLayer, iterMd, anyWl, anyWi, biasMd,
                                 dstLayer, iterMd),
          eng, lbrPd);
      bwd = lbr_gru_backward(pd);
      bwdWl = pd.weights_layer_desc();
      bwdWi = pd.weights_iter_desc();
      dWl = pd.diff_weights_layer_desc();
      dWi = pd.diff_weights_iter_desc();
    }
    memory bwl = fwl, bwi = fwi;
    if (bwdWl != fwdWl) {
      bwl = memory(bwdWl, eng);
      weightReorders.push_back({reorder(fwl, bwl), fwl, bwl});
    }
    if (bwdWi != fwdWi) {
      bwi = memory(bwdWi, eng);
      weightReorders.push_back({reorder(fwi, bwi), fwi, bwi});
    }
    bwdArgs = fwdArgs;
    bwdArgs[DNNL_ARG_WEIGHTS_LAYER] = bwl;
    bwdArgs[DNNL_ARG_WEIGHTS_ITER] = bwi;
    bwdArgs[DNNL_ARG_DIFF_SRC_LAYER] = zeros(srcLayer);
    bwdArgs[DNNL_ARG_DIFF_SRC_ITER] = zeros(iterMd);
    bwdArgs[DNNL_ARG_DIFF_WEIGHTS_LAYER] = zeros(dWl);
    bwdArgs[DNNL_ARG_DIFF_WEIGHTS_ITER] = zeros(dWi);
    bwdArgs[DNNL_ARG_DIFF_BIAS] = zeros(biasMd);
    bwdArgs[DNNL_ARG_DIFF_DST_LAYER] = make(dstLayer, 1.0f);
    bwdArgs[DNNL_ARG_DIFF_DST_ITER] = zeros(iterMd);
    if (lstm) {
      bwdArgs[DNNL_ARG_DIFF_SRC_ITER_C] = zeros(iterMd);
      bwdArgs[DNNL_ARG_DIFF_DST_ITER_C] = zeros(iterMd);
    }
  }

  void run() override {
    fwd.execute(strm, fwdArgs);
    if (w.mode == Mode::Training) {
      for (Reorder &r : weightReorders)
        r.op.execute(strm, r.from, r.to);
      bwd.execute(strm, bwdArgs);
    }
    strm.wait();
  }

private:
  struct Reorder {
    reorder op;
    memory from, to;
  };
  Workload w;
  engine eng;
  stream strm;
  primitive fwd, bwd;
  std::unordered_map<int, memory> fwdArgs, bwdArgs;
  std::vector<Reorder> weightReorders;
};

std::unique_ptr<Runner> make(Kind kind, const Workload &w, std::string &why) {
  if (w.mode == Mode::Step) {
    why = "sequences-only";
    return nullptr;
  }
  bool covered = kind == Kind::Lstm ? w.cell == "lstm" : w.cell == "gru";
  if (!covered) {
    why = "no-such-primitive";
    return nullptr;
  }
  try {
    return std::make_unique<OnednnRunner>(kind, w);
  } catch (const dnnl::error &e) {
    fail(std::string("oneDNN: ") + e.what());
  }
}

void setThreads(int threads) { setOmpThreads(threads); }

Register lstm({"onednn-lstm",
               [](const Workload &w, std::string &why) {
                 return make(Kind::Lstm, w, why);
               },
               setThreads, prewarmSgemm});
Register gru({"onednn-gru",
              [](const Workload &w, std::string &why) {
                return make(Kind::Gru, w, why);
              },
              setThreads, prewarmSgemm});
Register lbr({"onednn-lbr-gru",
              [](const Workload &w, std::string &why) {
                return make(Kind::LbrGru, w, why);
              },
              setThreads, prewarmSgemm});

} // namespace
