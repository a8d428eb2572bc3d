//===- References.cpp - The published cell equations in LibTorch ----------===//
//
// Each step below is transcribed from the paper (equation numbers given),
// with the operator spelling of the paper. W @ x is written `mv(W, x)`, which
// also works on a batch of rows.
//
//===----------------------------------------------------------------------===//

#include "References.h"

using at::Tensor;
using namespace cellc_test;

namespace {

// Only ATen's Tensor is included (the full operator set would cost the
// <torch/torch.h> compile time again), so the few operators the equations
// need are spelled out here.
Tensor operator+(const Tensor &a, const Tensor &b) { return a.add(b); }
Tensor operator-(const Tensor &a, const Tensor &b) { return a.sub(b); }
Tensor operator*(const Tensor &a, const Tensor &b) { return a.mul(b); }
Tensor operator-(double a, const Tensor &b) { return b.neg().add(a); }

/// W @ x for a matrix W [R, C] and x [C] or a batch of rows x [B, C].
Tensor mv(const Tensor &w, const Tensor &x) { return x.matmul(w.t()); }
Tensor sigmoid(const Tensor &v) { return v.sigmoid(); }
Tensor tanh(const Tensor &v) { return v.tanh(); }

/// Layer normalisation over the last dimension, no gain or bias (Ba et al.
/// 2016): zero mean, unit biased variance, eps 1e-5.
Tensor layerNorm(const Tensor &v) {
  Tensor centred = v - v.mean({-1}, /*keepdim=*/true);
  Tensor variance = (centred * centred).mean({-1}, /*keepdim=*/true);
  return centred.div(variance.add(1e-5).sqrt());
}

const Tensor &param(const ReferenceParams &params, const std::string &name) {
  auto it = params.find(name);
  if (it == params.end())
    throw std::runtime_error("reference: missing param '" + name + "'");
  return it->second;
}

Reference makeAtr() {
  Reference ref;
  ref.cell = "atr";
  ref.source = "ATR, Zhang et al. 2018, Eq. 6-9";
  ref.inputs = {"x"};
  ref.states = {"h"};
  ref.params = {"Wx", "Wh"};
  ref.step = [](const ReferenceParams &P, const Tensor &x,
                const std::vector<Tensor> &s) {
    const Tensor &h = s[0];
    Tensor p = mv(param(P, "Wx"), x); // Eq. 6
    Tensor q = mv(param(P, "Wh"), h); // Eq. 7
    Tensor i = sigmoid(p + q);        // Eq. 8, input gate
    Tensor f = sigmoid(p - q);        // Eq. 8, forget gate
    Tensor hNext = i * p + f * h;     // Eq. 9
    return ReferenceStep{{hNext}, hNext};
  };
  return ref;
}

Reference makeGru() {
  Reference ref;
  ref.cell = "gru";
  ref.source = "GRU as written in the ATR paper, Eq. 2-5";
  ref.inputs = {"x"};
  ref.states = {"h"};
  ref.params = {"Wz", "Wr", "Wh", "Uz", "Ur", "Uh", "bz", "br", "bh"};
  ref.step = [](const ReferenceParams &P, const Tensor &x,
                const std::vector<Tensor> &s) {
    const Tensor &h = s[0];
    Tensor z =
        sigmoid(mv(param(P, "Wz"), x) + mv(param(P, "Uz"), h) + param(P, "bz"));
    Tensor r =
        sigmoid(mv(param(P, "Wr"), x) + mv(param(P, "Ur"), h) + param(P, "br"));
    // The reset gate acts on h before the recurrent product.
    Tensor c = tanh(mv(param(P, "Wh"), x) + mv(param(P, "Uh"), r * h) +
                    param(P, "bh"));
    Tensor hNext = z * h + (1.0 - z) * c;
    return ReferenceStep{{hNext}, hNext};
  };
  return ref;
}

Reference makeTorchGru() {
  Reference ref;
  ref.cell = "torch_gru";
  ref.source = "GRU as torch.nn.GRU documents it (cuDNN's form)";
  ref.inputs = {"x"};
  ref.states = {"h"};
  ref.params = {"Wr", "Wz", "Wn", "Ur", "Uz", "Un", "br", "bz", "bn", "bhn"};
  ref.step = [](const ReferenceParams &P, const Tensor &x,
                const std::vector<Tensor> &s) {
    const Tensor &h = s[0];
    Tensor r =
        sigmoid(mv(param(P, "Wr"), x) + mv(param(P, "Ur"), h) + param(P, "br"));
    Tensor z =
        sigmoid(mv(param(P, "Wz"), x) + mv(param(P, "Uz"), h) + param(P, "bz"));
    // The reset gate acts on the recurrent product, bias included.
    Tensor n = tanh(mv(param(P, "Wn"), x) + param(P, "bn") +
                    r * (mv(param(P, "Un"), h) + param(P, "bhn")));
    Tensor hNext = (1.0 - z) * n + z * h;
    return ReferenceStep{{hNext}, hNext};
  };
  return ref;
}

Reference makeLstm() {
  Reference ref;
  ref.cell = "lstm";
  ref.source = "LSTM, standard formulation (8 matrices)";
  ref.inputs = {"x"};
  ref.states = {"h", "c"};
  ref.params = {"Wi", "Wf", "Wo", "Wg", "Ui", "Uf",
                "Uo", "Ug", "bi", "bf", "bo", "bg"};
  ref.step = [](const ReferenceParams &P, const Tensor &x,
                const std::vector<Tensor> &s) {
    const Tensor &h = s[0], &c = s[1];
    auto gate = [&](const char *w, const char *u, const char *b) {
      return mv(param(P, w), x) + mv(param(P, u), h) + param(P, b);
    };
    Tensor i = sigmoid(gate("Wi", "Ui", "bi"));
    Tensor f = sigmoid(gate("Wf", "Uf", "bf"));
    Tensor o = sigmoid(gate("Wo", "Uo", "bo"));
    Tensor g = tanh(gate("Wg", "Ug", "bg"));
    Tensor cNext = f * c + i * g;
    Tensor hNext = o * tanh(cNext);
    return ReferenceStep{{hNext, cNext}, hNext};
  };
  return ref;
}

Reference makeRan() {
  Reference ref;
  ref.cell = "ran";
  ref.source = "RAN, Lee et al. 2017, simplest version, h = tanh(c)";
  ref.inputs = {"x"};
  ref.states = {"h", "c"};
  ref.params = {"Wc", "Wi", "Wf", "Ui", "Uf", "bi", "bf"};
  ref.step = [](const ReferenceParams &P, const Tensor &x,
                const std::vector<Tensor> &s) {
    const Tensor &h = s[0], &c = s[1];
    Tensor content = mv(param(P, "Wc"), x); // c~_t = W_cx x_t
    Tensor i =
        sigmoid(mv(param(P, "Ui"), h) + mv(param(P, "Wi"), x) + param(P, "bi"));
    Tensor f =
        sigmoid(mv(param(P, "Uf"), h) + mv(param(P, "Wf"), x) + param(P, "bf"));
    Tensor cNext = i * content + f * c;
    Tensor hNext = tanh(cNext); // the g = tanh variant
    return ReferenceStep{{hNext, cNext}, hNext};
  };
  return ref;
}

Reference makeLau() {
  Reference ref;
  ref.cell = "lau";
  ref.source = "LAU, Wang et al. 2017, Eq. 4-8";
  ref.inputs = {"x"};
  ref.states = {"h"};
  ref.params = {"Wxr", "Whr", "Wxz", "Whz", "Wxg", "Whg", "Wxh", "Whh", "Wx"};
  ref.step = [](const ReferenceParams &P, const Tensor &x,
                const std::vector<Tensor> &s) {
    const Tensor &h = s[0];
    Tensor r = sigmoid(mv(param(P, "Wxr"), x) + mv(param(P, "Whr"), h)); // 4
    Tensor z = sigmoid(mv(param(P, "Wxz"), x) + mv(param(P, "Whz"), h)); // 5
    Tensor g = sigmoid(mv(param(P, "Wxg"), x) + mv(param(P, "Whg"), h)); // 8
    Tensor f = 1.0 - r;
    Tensor candidate =
        tanh(f * mv(param(P, "Wxh"), x) + r * mv(param(P, "Whh"), h)); // 7
    Tensor linear = mv(param(P, "Wx"), x); // H(x) = Wx x
    Tensor hNext = ((1.0 - z) * h + z * candidate) * (1.0 - g) + g * linear;
    return ReferenceStep{{hNext}, hNext};
  };
  return ref;
}

Reference makeSru() {
  Reference ref;
  ref.cell = "sru";
  ref.source = "SRU, Lei et al. 2017";
  ref.inputs = {"x"};
  ref.states = {"c"};
  ref.params = {"W", "Wf", "Wr", "bf", "br"};
  ref.inputIsHidden = true;
  ref.step = [](const ReferenceParams &P, const Tensor &x,
                const std::vector<Tensor> &s) {
    const Tensor &c = s[0];
    Tensor xt = mv(param(P, "W"), x);
    Tensor f = sigmoid(mv(param(P, "Wf"), x) + param(P, "bf"));
    Tensor r = sigmoid(mv(param(P, "Wr"), x) + param(P, "br"));
    Tensor cNext = f * c + (1.0 - f) * xt;
    Tensor h = r * tanh(cNext) + (1.0 - r) * x; // highway
    return ReferenceStep{{cNext}, h};
  };
  return ref;
}

Reference makeSrnmt() {
  Reference ref;
  ref.cell = "srnmt";
  ref.source = "SR-NMT encoder unit, Di Gangi and Federico 2018, sec. 3.1 "
               "(one direction)";
  ref.inputs = {"x"};
  ref.states = {"h"};
  ref.params = {"W"};
  ref.inputIsHidden = true;
  ref.step = [](const ReferenceParams &P, const Tensor &x,
                const std::vector<Tensor> &s) {
    const Tensor &h = s[0];
    // [x~, g, z] = LN(x W): one normalisation over the joint projection.
    std::vector<Tensor> parts = layerNorm(mv(param(P, "W"), x)).chunk(3, -1);
    const Tensor &xt = parts[0], &g = parts[1], &z = parts[2];
    Tensor hNext = (1.0 - sigmoid(g)) * h + sigmoid(g) * xt;
    Tensor out = (1.0 - sigmoid(z)) * hNext + sigmoid(z) * x; // highway
    return ReferenceStep{{hNext}, out};
  };
  return ref;
}

Reference makeRnn() {
  Reference ref;
  ref.cell = "rnn";
  ref.source = "Elman RNN";
  ref.inputs = {"x"};
  ref.states = {"h"};
  ref.params = {"W", "U", "b"};
  ref.step = [](const ReferenceParams &P, const Tensor &x,
                const std::vector<Tensor> &s) {
    Tensor hNext =
        tanh(mv(param(P, "W"), x) + mv(param(P, "U"), s[0]) + param(P, "b"));
    return ReferenceStep{{hNext}, hNext};
  };
  return ref;
}

} // namespace

const Reference &cellc_test::atrReference() {
  static const Reference ref = makeAtr();
  return ref;
}
const Reference &cellc_test::gruReference() {
  static const Reference ref = makeGru();
  return ref;
}
const Reference &cellc_test::torchGruReference() {
  static const Reference ref = makeTorchGru();
  return ref;
}
const Reference &cellc_test::lstmReference() {
  static const Reference ref = makeLstm();
  return ref;
}
const Reference &cellc_test::ranReference() {
  static const Reference ref = makeRan();
  return ref;
}
const Reference &cellc_test::lauReference() {
  static const Reference ref = makeLau();
  return ref;
}
const Reference &cellc_test::sruReference() {
  static const Reference ref = makeSru();
  return ref;
}
const Reference &cellc_test::srnmtReference() {
  static const Reference ref = makeSrnmt();
  return ref;
}
const Reference &cellc_test::rnnReference() {
  static const Reference ref = makeRnn();
  return ref;
}

std::vector<const Reference *> cellc_test::allReferences() {
  return {&atrReference(), &gruReference(), &lstmReference(),  &ranReference(),
          &lauReference(), &sruReference(), &srnmtReference(), &rnnReference(),
          &torchGruReference()};
}
