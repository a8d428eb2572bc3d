//===- TorchBench.cpp - LibTorch peers: eager equations and nn modules ----===//
//
// The one TU of the benchmarks that includes <torch/torch.h>.
//
// torch-eager: the cell's equations the way a good PyTorch user writes them:
//   * parameters stored stacked ([Wz;Wr;Wh] as one [3H, I] tensor, biases
//     concatenated), as nn.GRU/nn.LSTM store them;
//   * the input projection hoisted out of the loop as ONE addmm over all
//     T*B rows, split per step with unbind (not indexing);
//   * per step one (stacked) recurrent mm, the gate bias/sum folded into
//     addmm where the math allows, one sigmoid over all sigmoid gates,
//     chunk/narrow views instead of copies, lerp/addcmul for the convex
//     combinations;
//   * SRU and SR-NMT: every gate computed over all T*B rows at once, the
//     per-step loop only the element-wise recurrence (one lerp);
//   * inference under c10::InferenceMode; training through autograd with
//     out.backward(dOut) and gradients reset to None (set_to_none) between
//     iterations.
// torch-nn: nn::GRU / nn::LSTM over the sequence (cuDNN-style LBR GRU),
//   nn::GRUCell / nn::LSTMCell for the decoding step.
// Threads: at::set_num_threads(n) and, since LibTorch's GEMMs go through
// Debian's pthread OpenBLAS, openblas_set_num_threads(n).
//
//===----------------------------------------------------------------------===//

#include "Bench.h"

#include <torch/torch.h>

#include <dlfcn.h>

using namespace cellc_bench;
using torch::Tensor;

namespace {

Tensor randomTensor(std::vector<int64_t> shape, float scale, uint32_t seed) {
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  Tensor t = torch::empty(shape, torch::kFloat32);
  fillRandom(t.data_ptr<float>(), count, scale, seed);
  return t;
}

/// The eager equations of one cell over stacked parameters.
class EagerRunner : public Runner {
public:
  explicit EagerRunner(const Workload &w) : w(w), shape(cellShape(w.cell)) {
    training = w.mode == Mode::Training;
    float scale = 1.0f / std::sqrt(static_cast<float>(w.H));
    uint32_t seed = 300;
    int64_t gx = shape.inputGates * w.H;
    Wx = randomTensor({gx, w.I}, scale, seed++);
    params.push_back(Wx);
    for (int g : shape.stateGates) {
      U.push_back(randomTensor({g * w.H, w.H}, scale, seed++));
      params.push_back(U.back());
    }
    bool hasBias = w.cell == "gru" || w.cell == "lstm" || w.cell == "sru";
    if (hasBias) {
      // SRU: only f and r have biases; the candidate's third is zero.
      bias = randomTensor({gx}, scale, seed++);
      params.push_back(bias);
    }
    if (training)
      for (Tensor &p : params)
        p.requires_grad_(true);
    if (w.mode == Mode::Step) {
      x = randomTensor({w.B, w.I}, 1.0f, seed++);
      int states = w.cell == "lstm" ? 2 : 1;
      for (int i = 0; i < states; ++i)
        state.push_back(randomTensor({w.B, w.H}, 0.5f, seed++));
      if (w.B > 1) {
        std::vector<int64_t> rows;
        for (int64_t b = 0; b < w.B; ++b)
          rows.push_back((b * 7 + 3) % w.B);
        parents = torch::tensor(rows, torch::kLong);
      }
      return;
    }
    x = randomTensor({w.T, w.B, w.I}, 1.0f, seed++);
    if (training) {
      x.requires_grad_(true);
      dOut = randomTensor({w.T, w.B, w.H}, 1.0f, seed++);
    }
  }

  void run() override {
    if (w.mode == Mode::Step) {
      c10::InferenceMode guard;
      for (int64_t s = 0; s < w.stepsPerRun; ++s) {
        std::vector<Tensor> current = state;
        if (parents.defined())
          for (Tensor &t : current)
            t = t.index_select(0, parents);
        state = step(current);
      }
      return;
    }
    if (!training) {
      c10::InferenceMode guard;
      Tensor out = sequence();
      return;
    }
    for (Tensor &p : params)
      p.mutable_grad() = Tensor();
    x.mutable_grad() = Tensor();
    Tensor out = sequence();
    out.backward(dOut);
  }

private:
  int64_t H() const { return w.H; }

  /// The input projection over all rows (bias folded in where there is one).
  Tensor project(const Tensor &rows) const {
    if (!bias.defined())
      return rows.mm(Wx.t());
    return torch::addmm(bias, rows, Wx.t());
  }

  /// One decoding step from this step's projection of x.
  std::vector<Tensor> step(const std::vector<Tensor> &s) const {
    Tensor xp = project(x);
    const std::string &cell = w.cell;
    int64_t h = H();
    if (cell == "sru") {
      Tensor fr = xp.narrow(1, h, 2 * h).sigmoid();
      Tensor c = torch::lerp(xp.narrow(1, 0, h), s[0], fr.narrow(1, 0, h));
      Tensor out = torch::lerp(x, c.tanh(), fr.narrow(1, h, h));
      return {c};
    }
    if (cell == "srnmt") {
      Tensor y = torch::layer_norm(xp, {3 * h});
      Tensor gz = y.narrow(1, h, 2 * h).sigmoid();
      Tensor next = torch::lerp(s[0], y.narrow(1, 0, h), gz.narrow(1, 0, h));
      Tensor out = torch::lerp(next, x, gz.narrow(1, h, h));
      return {next};
    }
    return recurrentStep(xp, s);
  }

  /// One step of a cell with recurrent products; xp is [B, Gx*H].
  std::vector<Tensor> recurrentStep(const Tensor &xp,
                                    const std::vector<Tensor> &s) const {
    const std::string &cell = w.cell;
    int64_t h = H();
    const Tensor &hPrev = s[0];
    if (cell == "atr") {
      Tensor q = hPrev.mm(U[0].t());
      Tensor i = (xp + q).sigmoid();
      Tensor f = (xp - q).sigmoid();
      return {torch::addcmul(i * xp, f, hPrev)};
    }
    if (cell == "gru") {
      Tensor zr = xp.narrow(1, 0, 2 * h).addmm(hPrev, U[0].t()).sigmoid();
      Tensor z = zr.narrow(1, 0, h), r = zr.narrow(1, h, h);
      Tensor c = xp.narrow(1, 2 * h, h).addmm(r * hPrev, U[1].t()).tanh();
      return {torch::lerp(c, hPrev, z)};
    }
    if (cell == "lstm") {
      Tensor gates = xp.addmm(hPrev, U[0].t());
      Tensor ifo = gates.narrow(1, 0, 3 * h).sigmoid();
      Tensor g = gates.narrow(1, 3 * h, h).tanh();
      Tensor c = torch::addcmul(ifo.narrow(1, h, h) * s[1], ifo.narrow(1, 0, h),
                                g);
      return {ifo.narrow(1, 2 * h, h) * c.tanh(), c};
    }
    if (cell == "lau") {
      Tensor hp = hPrev.mm(U[0].t());
      Tensor rzg = (xp.narrow(1, 0, 3 * h) + hp.narrow(1, 0, 3 * h)).sigmoid();
      Tensor r = rzg.narrow(1, 0, h), z = rzg.narrow(1, h, h),
             g = rzg.narrow(1, 2 * h, h);
      Tensor c =
          torch::lerp(xp.narrow(1, 3 * h, h), hp.narrow(1, 3 * h, h), r).tanh();
      return {torch::lerp(torch::lerp(hPrev, c, z), xp.narrow(1, 4 * h, h), g)};
    }
    fail("torch-eager: no equations for " + cell);
  }

  /// The whole sequence; returns the outputs [T, B, H].
  Tensor sequence() const {
    int64_t T = w.T, B = w.B, h = H();
    Tensor rows = x.view({T * B, w.I});
    Tensor xp = project(rows);
    if (w.cell == "sru" || w.cell == "srnmt") {
      // Every gate over all rows; the loop is the element-wise scan only.
      Tensor candidate, gate, highway;
      if (w.cell == "sru") {
        Tensor fr = xp.narrow(1, h, 2 * h).sigmoid();
        candidate = xp.narrow(1, 0, h);
        gate = fr.narrow(1, 0, h);
        highway = fr.narrow(1, h, h);
      } else {
        Tensor y = torch::layer_norm(xp, {3 * h});
        Tensor gz = y.narrow(1, h, 2 * h).sigmoid();
        candidate = y.narrow(1, 0, h);
        gate = gz.narrow(1, 0, h);
        highway = gz.narrow(1, h, h);
      }
      std::vector<Tensor> cand = candidate.view({T, B, h}).unbind(0);
      std::vector<Tensor> gates = gate.view({T, B, h}).unbind(0);
      Tensor state = torch::zeros({B, h});
      std::vector<Tensor> states;
      states.reserve(T);
      for (int64_t t = 0; t < T; ++t) {
        // SRU: c' = f*c + (1-f)*x~; SR-NMT: h' = (1-g)*h + g*x~.
        state = w.cell == "sru" ? torch::lerp(cand[t], state, gates[t])
                                : torch::lerp(state, cand[t], gates[t]);
        states.push_back(state);
      }
      Tensor all = torch::stack(states);
      Tensor r = highway.view({T, B, h});
      // SRU: r*tanh(c) + (1-r)*x; SR-NMT: (1-z)*h + z*x.
      return w.cell == "sru" ? torch::lerp(x, all.tanh(), r)
                             : torch::lerp(all, x, r);
    }
    std::vector<Tensor> steps = xp.view({T, B, xp.size(1)}).unbind(0);
    std::vector<Tensor> s = {torch::zeros({B, h})};
    if (w.cell == "lstm")
      s.push_back(torch::zeros({B, h}));
    std::vector<Tensor> outs;
    outs.reserve(T);
    for (int64_t t = 0; t < T; ++t) {
      s = recurrentStep(steps[t], s);
      outs.push_back(s[0]);
    }
    return torch::stack(outs);
  }

  Workload w;
  CellShape shape;
  bool training = false;
  Tensor Wx, bias, x, dOut, parents;
  std::vector<Tensor> U, params, state;
};

/// nn::GRU / nn::LSTM (sequences) and nn::GRUCell / nn::LSTMCell (steps).
class NnRunner : public Runner {
public:
  explicit NnRunner(const Workload &w) : w(w) {
    torch::manual_seed(4);
    lstm = w.cell == "lstm";
    uint32_t seed = 400;
    if (w.mode == Mode::Step) {
      if (lstm)
        lstmCell = torch::nn::LSTMCell(w.I, w.H);
      else
        gruCell = torch::nn::GRUCell(w.I, w.H);
      x = randomTensor({w.B, w.I}, 1.0f, seed++);
      h = randomTensor({w.B, w.H}, 0.5f, seed++);
      c = randomTensor({w.B, w.H}, 0.5f, seed++);
      if (w.B > 1) {
        std::vector<int64_t> rows;
        for (int64_t b = 0; b < w.B; ++b)
          rows.push_back((b * 7 + 3) % w.B);
        parents = torch::tensor(rows, torch::kLong);
      }
      return;
    }
    if (lstm)
      lstmModule = torch::nn::LSTM(torch::nn::LSTMOptions(w.I, w.H));
    else
      gruModule = torch::nn::GRU(torch::nn::GRUOptions(w.I, w.H));
    x = randomTensor({w.T, w.B, w.I}, 1.0f, seed++);
    if (w.mode == Mode::Training) {
      x.requires_grad_(true);
      dOut = randomTensor({w.T, w.B, w.H}, 1.0f, seed++);
    }
  }

  void run() override {
    if (w.mode == Mode::Step) {
      c10::InferenceMode guard;
      for (int64_t s = 0; s < w.stepsPerRun; ++s) {
        Tensor hIn = parents.defined() ? h.index_select(0, parents) : h;
        if (lstm) {
          Tensor cIn = parents.defined() ? c.index_select(0, parents) : c;
          std::tie(h, c) = lstmCell->forward(x, std::make_tuple(hIn, cIn));
        } else {
          h = gruCell->forward(x, hIn);
        }
      }
      return;
    }
    if (w.mode == Mode::Forward) {
      c10::InferenceMode guard;
      Tensor out = lstm ? std::get<0>(lstmModule->forward(x))
                        : std::get<0>(gruModule->forward(x));
      return;
    }
    if (lstm)
      lstmModule->zero_grad(/*set_to_none=*/true);
    else
      gruModule->zero_grad(/*set_to_none=*/true);
    x.mutable_grad() = Tensor();
    Tensor out = lstm ? std::get<0>(lstmModule->forward(x))
                      : std::get<0>(gruModule->forward(x));
    out.backward(dOut);
  }

private:
  Workload w;
  bool lstm = false;
  torch::nn::LSTM lstmModule{nullptr};
  torch::nn::GRU gruModule{nullptr};
  torch::nn::LSTMCell lstmCell{nullptr};
  torch::nn::GRUCell gruCell{nullptr};
  Tensor x, h, c, dOut, parents;
};

void setTorchThreads(int threads) {
  at::set_num_threads(threads);
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(
          dlsym(RTLD_DEFAULT, "openblas_set_num_threads")))
    set(threads);
}

void prewarmTorch() {
  Tensor a = torch::full({64, 64}, 0.5f);
  Tensor b = a.mm(a).sigmoid().tanh();
  (void)b;
}

Register eager({"torch-eager",
                [](const Workload &w, std::string &) -> std::unique_ptr<Runner> {
                  return std::make_unique<EagerRunner>(w);
                },
                setTorchThreads, prewarmTorch});
Register nn({"torch-nn",
             [](const Workload &w, std::string &why) -> std::unique_ptr<Runner> {
               if (w.cell != "gru" && w.cell != "lstm") {
                 why = "no-such-module";
                 return nullptr;
               }
               return std::make_unique<NnRunner>(w);
             },
             setTorchThreads, prewarmTorch});

} // namespace
