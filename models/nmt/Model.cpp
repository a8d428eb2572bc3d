//===- models/nmt/Model.cpp - RNNSearch over compiled cells --------------===//

#include "models/nmt/Model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nmt {

namespace {

/// Arguments of one decoder cell step run as a length-1 sequence.
cellrt::ForwardArgs stepArgs(const CellLayer &layer, const float *input,
                             int64_t B, const int32_t *ones,
                             const std::vector<float *> &initial,
                             float *output,
                             const std::vector<float *> &finals) {
  cellrt::ForwardArgs args;
  args.inputs = {{input, {1, B, layer.inputWidth()}}};
  args.lengths = ones;
  for (size_t k = 0; k < initial.size(); ++k) {
    args.initialStates.push_back({initial[k], {B, layer.stateWidths()[k]}});
    args.finalStates.push_back({finals[k], {B, layer.stateWidths()[k]}});
  }
  args.params = layer.paramArrays();
  args.output = {output, {1, B, layer.outputWidth()}};
  return args;
}

} // namespace

Param &Model::add(const std::string &name, std::vector<int64_t> shape) {
  return store.add(name, std::move(shape));
}

Model::Model(const ModelConfig &config, const cellrt::Cell &cell)
    : config(config) {
  int64_t E = config.emb, H = config.hidden;
  Esrc = &add("src_embedding", {config.srcVocab, E});
  Etgt = &add("tgt_embedding", {config.tgtVocab, E});
  encF = std::make_unique<CellLayer>(cell, "encoder_fwd", E, H, store);
  encB = std::make_unique<CellLayer>(cell, "encoder_bwd", E, H, store);
  C = encF->outputWidth() + encB->outputWidth();
  dec1 = std::make_unique<CellLayer>(cell, "decoder1", E, H, store);
  dec2 = std::make_unique<CellLayer>(cell, "decoder2", C, H, store);
  if (dec1->stateWidths() != dec2->stateWidths())
    throw DataError("decoder cells have different state widths");
  int64_t S0 = dec1->stateWidths()[0], A = config.att, R = config.readout;
  Winit = &add("init.W", {S0, C});
  binit = &add("init.b", {S0});
  Wa = &add("attention.Wa", {A, dec1->outputWidth()});
  Ua = &add("attention.Ua", {A, C});
  ba = &add("attention.b", {A});
  va = &add("attention.v", {A});
  Ws = &add("readout.Ws", {R, dec2->outputWidth()});
  Wy = &add("readout.Wy", {R, E});
  Wc = &add("readout.Wc", {R, C});
  bo = &add("readout.b", {R});
  Wout = &add("output.W", {config.tgtVocab, R});
  bout = &add("output.b", {config.tgtVocab});
  if (!cell.hasBackward())
    throw DataError("cell " + cell.getPlan().cellName +
                    " was compiled without backward directives");
}

void Model::initialize(Rng &rng, float scale) {
  for (Param *param : store.all())
    uniformInit(param->value, scale, rng);
}

std::vector<Param *> Model::params() { return store.all(); }

int64_t Model::parameterCount() { return store.count(); }

void Model::encode(const Batch &batch, bool train) {
  int64_t B = batch.B, Tx = batch.Tx, E = config.emb;
  int64_t Hf = encF->outputWidth(), Hb = encB->outputWidth();
  xs.resize(Tx * B * E);
  embeddingForward(Esrc->value.data(), E, batch.src.data(), Tx * B, xs.data());
  hf.assign(Tx * B * Hf, 0.f);
  hb.assign(Tx * B * Hb, 0.f);
  argsF = cellrt::ForwardArgs();
  argsF.inputs = {{xs.data(), {Tx, B, E}}};
  argsF.lengths = batch.srcLen.data();
  argsF.params = encF->paramArrays();
  argsF.output = {hf.data(), {Tx, B, Hf}};
  argsB = argsF;
  argsB.params = encB->paramArrays();
  argsB.output = {hb.data(), {Tx, B, Hb}};
  argsB.reverse = true;
  if (train) {
    check(encF->cell().forward(argsF, tapeF), "encoder forward");
    check(encB->cell().forward(argsB, tapeB), "encoder backward-direction");
  } else {
    check(encF->cell().forward(argsF), "encoder forward");
    check(encB->cell().forward(argsB), "encoder backward-direction");
  }
  ann.resize(Tx * B * C);
  for (int64_t r = 0; r < Tx * B; ++r) {
    std::copy_n(hf.data() + r * Hf, Hf, ann.data() + r * C);
    std::copy_n(hb.data() + r * Hb, Hb, ann.data() + r * C + Hf);
  }
  tanhInPlace(ann.data(), Tx * B * C);
  mean.assign(B * C, 0.f);
  for (int64_t b = 0; b < B; ++b) {
    int64_t L = batch.srcLen[b];
    for (int64_t t = 0; t < L; ++t)
      for (int64_t j = 0; j < C; ++j)
        mean[b * C + j] += ann[(t * B + b) * C + j];
    for (int64_t j = 0; j < C; ++j)
      mean[b * C + j] /= float(L);
  }
  int64_t S0 = Winit->shape[0];
  s0.resize(B * S0);
  linear(mean.data(), B, C, Winit->value.data(), S0, s0.data(), false);
  addBias(s0.data(), B, S0, binit->value.data());
  tanhInPlace(s0.data(), B * S0);
  int64_t A = config.att;
  UH.resize(Tx * B * A);
  linear(ann.data(), Tx * B, C, Ua->value.data(), A, UH.data(), false);
  addBias(UH.data(), Tx * B, A, ba->value.data());
}

double Model::loss(const Batch &batch, bool backward, Rng *dropoutRng) {
  const int64_t B = batch.B, Tx = batch.Tx, Ty = batch.Ty, E = config.emb;
  const int64_t A = config.att, R = config.readout, V = config.tgtVocab;
  const int64_t O1 = dec1->outputWidth(), O2 = dec2->outputWidth();
  const std::vector<int64_t> &widths = dec1->stateWidths();
  const size_t K = widths.size();
  const int64_t N = Ty * B;
  encode(batch, backward);

  std::vector<int32_t> ones(B, 1);
  std::vector<float> Ye(N * E);
  embeddingForward(Etgt->value.data(), E, batch.tgtIn.data(), N, Ye.data());
  // States before each step (S, Ty+1 slots) and between the two cells (St).
  std::vector<std::vector<float>> S(K), St(K);
  for (size_t k = 0; k < K; ++k) {
    S[k].assign((Ty + 1) * B * widths[k], 0.f);
    St[k].assign(Ty * B * widths[k], 0.f);
  }
  std::copy(s0.begin(), s0.end(), S[0].begin());
  std::vector<float> out1(N * O1), Q(N * A), alpha(Ty * Tx * B), ctx(N * C),
      out2(N * O2);
  auto slots = [&](std::vector<std::vector<float>> &arrays, int64_t j) {
    std::vector<float *> pointers;
    for (size_t k = 0; k < K; ++k)
      pointers.push_back(arrays[k].data() + j * B * widths[k]);
    return pointers;
  };
  if (backward) {
    if (int64_t(tapes1.size()) < Ty) {
      tapes1.resize(Ty);
      tapes2.resize(Ty);
    }
  }
  AttentionShape shape{Tx, B, C, A, B};
  for (int64_t j = 0; j < Ty; ++j) {
    auto args1 = stepArgs(*dec1, Ye.data() + j * B * E, B, ones.data(),
                          slots(S, j), out1.data() + j * B * O1, slots(St, j));
    if (backward)
      check(dec1->cell().forward(args1, tapes1[j]), "decoder cell 1");
    else
      check(dec1->cell().forward(args1), "decoder cell 1");
    linear(out1.data() + j * B * O1, B, O1, Wa->value.data(), A,
           Q.data() + j * B * A, false);
    attentionForward(shape, ann.data(), UH.data(), batch.srcLen.data(),
                     nullptr, Q.data() + j * B * A, va->value.data(),
                     alpha.data() + j * Tx * B, ctx.data() + j * B * C);
    auto args2 = stepArgs(*dec2, ctx.data() + j * B * C, B, ones.data(),
                          slots(St, j), out2.data() + j * B * O2,
                          slots(S, j + 1));
    if (backward)
      check(dec2->cell().forward(args2, tapes2[j]), "decoder cell 2");
    else
      check(dec2->cell().forward(args2), "decoder cell 2");
  }

  // Readout and softmax over all Ty*B rows at once.
  std::vector<float> TS(out2);
  tanhInPlace(TS.data(), N * O2);
  std::vector<float> Tr(N * R);
  linear(TS.data(), N, O2, Ws->value.data(), R, Tr.data(), false);
  linear(Ye.data(), N, E, Wy->value.data(), R, Tr.data(), true);
  linear(ctx.data(), N, C, Wc->value.data(), R, Tr.data(), true);
  addBias(Tr.data(), N, R, bo->value.data());
  tanhInPlace(Tr.data(), N * R);
  std::vector<float> Td(Tr), dropMask;
  bool dropping = dropoutRng && config.dropout > 0;
  if (dropping)
    dropoutForward(Td.data(), N * R, config.dropout, *dropoutRng, dropMask);
  logits.resize(N * V);
  linear(Td.data(), N, R, Wout->value.data(), V, logits.data(), false);
  addBias(logits.data(), N, V, bout->value.data());
  logSoftmax(logits.data(), N, V);
  std::vector<uint8_t> mask(N);
  for (int64_t j = 0; j < Ty; ++j)
    for (int64_t b = 0; b < B; ++b)
      mask[j * B + b] = j < batch.tgtLen[b];
  dLogits.resize(backward ? N * V : 0);
  double total = crossEntropy(logits.data(), N, V, batch.tgtOut.data(),
                              mask.data(), 1.f / float(batch.targetTokens),
                              backward ? dLogits.data() : nullptr);
  if (!backward)
    return total;

  // Readout backward.
  std::vector<float> dT(N * R);
  linearBackward(Td.data(), N, R, Wout->value.data(), V, dLogits.data(),
                 Wout->grad.data(), dT.data(), false);
  biasBackward(dLogits.data(), N, V, bout->grad.data());
  for (int64_t i = 0; i < N * R; ++i) {
    if (dropping)
      dT[i] *= dropMask[i];
    dT[i] *= 1 - Tr[i] * Tr[i];
  }
  biasBackward(dT.data(), N, R, bo->grad.data());
  std::vector<float> dTS(N * O2), dYe(N * E), dCtx(N * C);
  linearBackward(TS.data(), N, O2, Ws->value.data(), R, dT.data(),
                 Ws->grad.data(), dTS.data(), false);
  linearBackward(Ye.data(), N, E, Wy->value.data(), R, dT.data(),
                 Wy->grad.data(), dYe.data(), false);
  linearBackward(ctx.data(), N, C, Wc->value.data(), R, dT.data(),
                 Wc->grad.data(), dCtx.data(), false);
  std::vector<float> dOut2(N * O2);
  for (int64_t i = 0; i < N * O2; ++i)
    dOut2[i] = dTS[i] * (1 - TS[i] * TS[i]);

  // The recurrence backward, last step first.
  std::vector<float> dAnn(Tx * B * C, 0.f), dUH(Tx * B * A, 0.f);
  std::vector<float> dQ(N * A), dOut1(N * O1), dCin(B * C), dYe1(B * E);
  std::vector<std::vector<float>> dS(K), dSt(K), dSprev(K);
  for (size_t k = 0; k < K; ++k) {
    dS[k].assign(B * widths[k], 0.f);
    dSt[k].assign(B * widths[k], 0.f);
    dSprev[k].assign(B * widths[k], 0.f);
  }
  auto gradList = [&](std::vector<std::vector<float>> &arrays, bool zero) {
    std::vector<cellrt::MutableArray> list;
    for (size_t k = 0; k < K; ++k) {
      if (zero)
        std::fill(arrays[k].begin(), arrays[k].end(), 0.f);
      list.push_back({arrays[k].data(), {B, widths[k]}});
    }
    return list;
  };
  auto constList = [&](std::vector<std::vector<float>> &arrays) {
    std::vector<cellrt::ConstArray> list;
    for (size_t k = 0; k < K; ++k)
      list.push_back({arrays[k].data(), {B, widths[k]}});
    return list;
  };
  auto dec1Grads = dec1->gradArrays(), dec2Grads = dec2->gradArrays();
  for (int64_t j = Ty - 1; j >= 0; --j) {
    auto args2 = stepArgs(*dec2, ctx.data() + j * B * C, B, ones.data(),
                          slots(St, j), out2.data() + j * B * O2,
                          slots(S, j + 1));
    cellrt::BackwardArgs g2;
    g2.outputGradient = {dOut2.data() + j * B * O2, {1, B, O2}};
    g2.finalStateGradients = constList(dS);
    std::fill(dCin.begin(), dCin.end(), 0.f);
    g2.inputGradients = {{dCin.data(), {1, B, C}}};
    g2.initialStateGradients = gradList(dSt, true);
    g2.paramGradients = dec2Grads;
    check(dec2->cell().backward(args2, g2, tapes2[j]), "decoder cell 2 backward");
    float *dc = dCtx.data() + j * B * C;
    for (int64_t i = 0; i < B * C; ++i)
      dc[i] += dCin[i];
    attentionBackward(shape, ann.data(), UH.data(), batch.srcLen.data(),
                      nullptr, Q.data() + j * B * A, va->value.data(),
                      alpha.data() + j * Tx * B, dc, dAnn.data(), dUH.data(),
                      dQ.data() + j * B * A, va->grad.data());
    linearBackward(out1.data() + j * B * O1, B, O1, Wa->value.data(), A,
                   dQ.data() + j * B * A, nullptr, dOut1.data() + j * B * O1,
                   false);
    auto args1 = stepArgs(*dec1, Ye.data() + j * B * E, B, ones.data(),
                          slots(S, j), out1.data() + j * B * O1, slots(St, j));
    cellrt::BackwardArgs g1;
    g1.outputGradient = {dOut1.data() + j * B * O1, {1, B, O1}};
    g1.finalStateGradients = constList(dSt);
    if (breakGradientForTest) // the classic bug: s~_j's state gradient lost
      g1.finalStateGradients.clear();
    std::fill(dYe1.begin(), dYe1.end(), 0.f);
    g1.inputGradients = {{dYe1.data(), {1, B, E}}};
    g1.initialStateGradients = gradList(dSprev, true);
    g1.paramGradients = dec1Grads;
    check(dec1->cell().backward(args1, g1, tapes1[j]), "decoder cell 1 backward");
    float *dy = dYe.data() + j * B * E;
    for (int64_t i = 0; i < B * E; ++i)
      dy[i] += dYe1[i];
    std::swap(dS, dSprev);
  }
  linearBackward(out1.data(), N, O1, Wa->value.data(), A, dQ.data(),
                 Wa->grad.data(), nullptr, false);
  embeddingBackward(Etgt->grad.data(), E, batch.tgtIn.data(), N, dYe.data());

  // Initial state: s0 = tanh(Winit mean + binit).
  int64_t S0 = Winit->shape[0];
  std::vector<float> dPre0(B * S0), dMean(B * C);
  for (int64_t i = 0; i < B * S0; ++i)
    dPre0[i] = dS[0][i] * (1 - s0[i] * s0[i]);
  biasBackward(dPre0.data(), B, S0, binit->grad.data());
  linearBackward(mean.data(), B, C, Winit->value.data(), S0, dPre0.data(),
                 Winit->grad.data(), dMean.data(), false);
  for (int64_t b = 0; b < B; ++b) {
    int64_t L = batch.srcLen[b];
    for (int64_t t = 0; t < L; ++t)
      for (int64_t j = 0; j < C; ++j)
        dAnn[(t * B + b) * C + j] += dMean[b * C + j] / float(L);
  }
  // Keys: UH = ann Ua^T + ba.
  biasBackward(dUH.data(), Tx * B, A, ba->grad.data());
  linearBackward(ann.data(), Tx * B, C, Ua->value.data(), A, dUH.data(),
                 Ua->grad.data(), dAnn.data(),
                 true);

  // Encoder.
  int64_t Hf = encF->outputWidth(), Hb = encB->outputWidth();
  std::vector<float> dHf(Tx * B * Hf), dHb(Tx * B * Hb);
  for (int64_t r = 0; r < Tx * B; ++r) {
    for (int64_t j = 0; j < Hf; ++j) {
      float a = ann[r * C + j];
      dHf[r * Hf + j] = dAnn[r * C + j] * (1 - a * a);
    }
    for (int64_t j = 0; j < Hb; ++j) {
      float a = ann[r * C + Hf + j];
      dHb[r * Hb + j] = dAnn[r * C + Hf + j] * (1 - a * a);
    }
  }
  std::vector<float> dXf(Tx * B * E, 0.f), dXb(Tx * B * E, 0.f);
  cellrt::BackwardArgs gF;
  gF.outputGradient = {dHf.data(), {Tx, B, Hf}};
  gF.inputGradients = {{dXf.data(), {Tx, B, E}}};
  gF.paramGradients = encF->gradArrays();
  check(encF->cell().backward(argsF, gF, tapeF), "encoder backward");
  cellrt::BackwardArgs gB;
  gB.outputGradient = {dHb.data(), {Tx, B, Hb}};
  gB.inputGradients = {{dXb.data(), {Tx, B, E}}};
  gB.paramGradients = encB->gradArrays();
  check(encB->cell().backward(argsB, gB, tapeB), "encoder backward");
  for (int64_t i = 0; i < Tx * B * E; ++i)
    dXf[i] += dXb[i];
  embeddingBackward(Esrc->grad.data(), E, batch.src.data(), Tx * B,
                    dXf.data());
  return total;
}

std::vector<std::vector<int32_t>>
Model::translate(const Batch &batch, int64_t beam, int64_t maxLength,
                 float lengthPenalty) {
  const int64_t B = batch.B, Tx = batch.Tx, E = config.emb, K = beam;
  const int64_t A = config.att, R = config.readout, V = config.tgtVocab;
  const int64_t O1 = dec1->outputWidth(), O2 = dec2->outputWidth();
  const std::vector<int64_t> &widths = dec1->stateWidths();
  const int64_t rows = B * K;
  encode(batch, false);
  const float minusInf = -std::numeric_limits<float>::infinity();

  // Row r = b*K + k is hypothesis k of sentence b. Each step runs only the
  // live rows (a hypothesis still extended, of a sentence not finished),
  // packed: `active` lists them, and the states after the step have one row
  // per active row. parents[r] is the row of r's parent in `S`, the packed
  // states of the previous step.
  std::vector<int32_t> row2seq(rows), parents(rows), prev(rows, Vocab::Bos);
  std::vector<float> scores(rows, minusInf);
  for (int64_t r = 0; r < rows; ++r) {
    row2seq[r] = int32_t(r / K);
    parents[r] = int32_t(r);
    if (r % K == 0)
      scores[r] = 0;
  }
  std::vector<std::vector<float>> S(widths.size()), St(widths.size()),
      Snext(widths.size());
  for (size_t k = 0; k < widths.size(); ++k)
    S[k].assign(rows * widths[k], 0.f);
  int64_t S0 = widths[0];
  for (int64_t r = 0; r < rows; ++r)
    std::copy(s0.begin() + row2seq[r] * S0, s0.begin() + (row2seq[r] + 1) * S0,
              S[0].begin() + r * S0);
  int64_t stateRows = rows;
  std::vector<std::vector<int32_t>> hyps(rows), nextHyps(rows);
  struct Finished {
    double score;
    std::vector<int32_t> tokens;
  };
  std::vector<std::vector<Finished>> finished(B);
  std::vector<bool> done(B, false);
  std::vector<int64_t> limit(B);
  int64_t longest = 0;
  for (int64_t b = 0; b < B; ++b) {
    limit[b] = std::min<int64_t>(maxLength, 2 * batch.srcLen[b] + 10);
    longest = std::max(longest, limit[b]);
  }
  std::vector<float> ye, out1, Q, alpha, ctx, out2, T, logits;
  std::vector<int32_t> newParents(rows), newPrev(rows), active, packedOf(rows),
      activeParents, activePrev, activeSeq;
  std::vector<float> newScores(rows);
  auto norm = [&](double score, size_t length) {
    return score / std::pow(double(length), double(lengthPenalty));
  };
  // The decoder cells' weights stay fixed while decoding: stack them once.
  auto packed1 = dec1->cell().packWeights(dec1->paramArrays());
  auto packed2 = dec2->cell().packWeights(dec2->paramArrays());
  check(packed1.getStatus(), "decoder cell 1 weights");
  check(packed2.getStatus(), "decoder cell 2 weights");
  struct Candidate {
    float score;
    int32_t row, word;
  };
  auto better = [](const Candidate &x, const Candidate &y) {
    return x.score > y.score;
  };
  std::vector<Candidate> candidates, best;
  for (int64_t step = 0; step < longest; ++step) {
    active.clear();
    activeParents.clear();
    activePrev.clear();
    activeSeq.clear();
    for (int64_t r = 0; r < rows; ++r)
      if (!done[row2seq[r]] && scores[r] != minusInf) {
        packedOf[r] = int32_t(active.size());
        active.push_back(int32_t(r));
        activeParents.push_back(parents[r]);
        activePrev.push_back(prev[r]);
        activeSeq.push_back(row2seq[r]);
      }
    const int64_t n = int64_t(active.size());
    if (n == 0)
      break;
    ye.resize(n * E);
    out1.resize(n * O1);
    Q.resize(n * A);
    alpha.resize(Tx * n);
    ctx.resize(n * C);
    out2.resize(n * O2);
    T.resize(n * R);
    logits.resize(n * V);
    for (size_t k = 0; k < widths.size(); ++k) {
      St[k].resize(n * widths[k]);
      Snext[k].resize(n * widths[k]);
    }
    embeddingForward(Etgt->value.data(), E, activePrev.data(), n, ye.data());
    cellrt::StepArgs a1;
    a1.packedWeights = &*packed1;
    a1.inputs = {{ye.data(), {n, E}}};
    for (size_t k = 0; k < widths.size(); ++k) {
      a1.states.push_back({S[k].data(), {stateRows, widths[k]}});
      a1.nextStates.push_back({St[k].data(), {n, widths[k]}});
    }
    a1.sourceRows = activeParents.data();
    a1.params = dec1->paramArrays();
    a1.output = {out1.data(), {n, O1}};
    check(dec1->cell().step(a1), "decoder cell 1 step");
    linear(out1.data(), n, O1, Wa->value.data(), A, Q.data(), false);
    AttentionShape shape{Tx, B, C, A, n};
    attentionForward(shape, ann.data(), UH.data(), batch.srcLen.data(),
                     activeSeq.data(), Q.data(), va->value.data(),
                     alpha.data(), ctx.data());
    cellrt::StepArgs a2;
    a2.packedWeights = &*packed2;
    a2.inputs = {{ctx.data(), {n, C}}};
    for (size_t k = 0; k < widths.size(); ++k) {
      a2.states.push_back({St[k].data(), {n, widths[k]}});
      a2.nextStates.push_back({Snext[k].data(), {n, widths[k]}});
    }
    a2.params = dec2->paramArrays();
    a2.output = {out2.data(), {n, O2}};
    check(dec2->cell().step(a2), "decoder cell 2 step");
    tanhInPlace(out2.data(), n * O2);
    linear(out2.data(), n, O2, Ws->value.data(), R, T.data(), false);
    linear(ye.data(), n, E, Wy->value.data(), R, T.data(), true);
    linear(ctx.data(), n, C, Wc->value.data(), R, T.data(), true);
    addBias(T.data(), n, R, bo->value.data());
    tanhInPlace(T.data(), n * R);
    linear(T.data(), n, R, Wout->value.data(), V, logits.data(), false);
    addBias(logits.data(), n, V, bout->value.data());
    logSoftmax(logits.data(), n, V);

    // Per sentence: the best 2K extensions of its live hypotheses (each
    // row's own best 2K first, so only K*2K candidates are sorted).
    const size_t wanted = size_t(2 * K);
    for (int64_t b = 0; b < B; ++b) {
      int64_t first = b * K;
      if (done[b]) {
        for (int64_t k = 0; k < K; ++k) {
          newParents[first + k] = 0;
          newPrev[first + k] = Vocab::Eos;
          newScores[first + k] = minusInf;
          nextHyps[first + k].clear();
        }
        continue;
      }
      candidates.clear();
      for (int64_t k = 0; k < K; ++k) {
        int64_t r = first + k;
        if (scores[r] == minusInf)
          continue;
        const float *row = logits.data() + int64_t(packedOf[r]) * V;
        best.clear();
        for (int64_t w = 0; w < V; ++w) {
          if (w == Vocab::Pad || w == Vocab::Bos)
            continue;
          Candidate cand{scores[r] + row[w], int32_t(r), int32_t(w)};
          if (best.size() < wanted) {
            best.push_back(cand);
            std::push_heap(best.begin(), best.end(), better);
          } else if (cand.score > best.front().score) {
            std::pop_heap(best.begin(), best.end(), better);
            best.back() = cand;
            std::push_heap(best.begin(), best.end(), better);
          }
        }
        candidates.insert(candidates.end(), best.begin(), best.end());
      }
      size_t keep = std::min(candidates.size(), wanted);
      std::partial_sort(candidates.begin(), candidates.begin() + keep,
                        candidates.end(), better);
      int64_t live = 0;
      bool last = step + 1 >= limit[b];
      for (size_t c = 0; c < keep && live < K; ++c) {
        const Candidate &cand = candidates[c];
        if (cand.word == Vocab::Eos) {
          finished[b].push_back(
              {norm(cand.score, hyps[cand.row].size() + 1), hyps[cand.row]});
          continue;
        }
        int64_t r = first + live++;
        newParents[r] = packedOf[cand.row];
        newPrev[r] = cand.word;
        newScores[r] = cand.score;
        nextHyps[r] = hyps[cand.row];
        nextHyps[r].push_back(cand.word);
      }
      for (int64_t r = first + live; r < first + K; ++r) {
        newParents[r] = 0;
        newPrev[r] = Vocab::Eos;
        newScores[r] = minusInf;
        nextHyps[r].clear();
      }
      if (last)
        for (int64_t r = first; r < first + live; ++r)
          finished[b].push_back(
              {norm(newScores[r], nextHyps[r].size()), nextHyps[r]});
      if (last || int64_t(finished[b].size()) >= K || live == 0)
        done[b] = true;
    }
    std::swap(S, Snext);
    stateRows = n;
    std::swap(hyps, nextHyps);
    parents = newParents;
    prev = newPrev;
    scores = newScores;
  }
  std::vector<std::vector<int32_t>> result(B);
  for (int64_t b = 0; b < B; ++b) {
    double best = -std::numeric_limits<double>::infinity();
    for (const Finished &f : finished[b])
      if (f.score > best) {
        best = f.score;
        result[b] = f.tokens;
      }
  }
  return result;
}

} // namespace nmt
