//===- models/common/WeaklyRecurrent.cpp - SR-NMT's units ----------------===//

#include "models/common/WeaklyRecurrent.h"

#include "models/common/Data.h"

#include <algorithm>
#include <cmath>

namespace models {

const char *gatedScanSource() {
  return R"(# SR-NMT's recurrence (Di Gangi and Federico 2018, §3): a gated
# average of the state and an input, no product with the state.
cell gated_scan(x: [H], g: [H]) {
  state s: [H]
  s' = (1 - sigmoid(g)) * s + sigmoid(g) * x
}
)";
}

namespace {

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

/// dst [rows, width] = columns [offset, offset + width) of src [rows, stride].
void copyColumns(const float *src, int64_t rows, int64_t stride,
                 int64_t offset, int64_t width, std::vector<float> &dst) {
  dst.resize(rows * width);
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(src + r * stride + offset, width, dst.data() + r * width);
}

/// Columns [offset, offset + width) of dst [rows, stride] = src.
void putColumns(const float *src, int64_t rows, int64_t width, int64_t stride,
                int64_t offset, float *dst) {
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(src + r * width, width, dst + r * stride + offset);
}

/// Zeros the rows of [T, B, width] past each sequence's length.
void zeroPadding(float *x, const int32_t *lengths, int64_t T, int64_t B,
                 int64_t width) {
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < B; ++b)
      if (t >= lengths[b])
        std::fill_n(x + (t * B + b) * width, width, 0.f);
}

void highwayForward(const float *inner, const float *x, const float *z,
                    int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i) {
    float gate = sigmoid(z[i]);
    out[i] = (1.f - gate) * inner[i] + gate * x[i];
  }
}

void highwayBackward(const float *dOut, const float *inner, const float *x,
                     const float *z, int64_t n, float *dInner, float *dX,
                     float *dZ) {
  for (int64_t i = 0; i < n; ++i) {
    float gate = sigmoid(z[i]);
    dInner[i] = dOut[i] * (1.f - gate);
    if (dX)
      dX[i] += dOut[i] * gate;
    dZ[i] = dOut[i] * (x[i] - inner[i]) * gate * (1.f - gate);
  }
}

} // namespace

NormedProjection::NormedProjection(ParamStore &store, const std::string &name,
                                   int64_t in, int64_t out, bool layerNorm)
    : linear(store, name, in, out, /*bias=*/!layerNorm) {
  if (layerNorm)
    norm = std::make_unique<LayerNorm>(store, name + "_norm", out);
}

void NormedProjection::forward(const float *x, int64_t rows,
                               Trace &trace) const {
  std::vector<float> &projected = norm ? trace.raw : trace.out;
  projected.resize(rows * outputWidth());
  linear.forward(x, rows, projected.data());
  if (!norm)
    return;
  trace.out.resize(rows * outputWidth());
  norm->forward(trace.raw.data(), rows, trace.out.data(), trace.stats);
}

void NormedProjection::backward(const float *x, int64_t rows, Trace &trace,
                                const float *dOut, float *dX) const {
  std::vector<float> dRaw;
  if (norm) {
    dRaw.assign(rows * outputWidth(), 0.f);
    norm->backward(trace.raw.data(), rows, trace.stats, dOut, dRaw.data());
    dOut = dRaw.data();
  }
  linear.backward(x, rows, dOut, dX, /*accumulateDx=*/true);
}

WeaklyRecurrentEncoderLayer::WeaklyRecurrentEncoderLayer(
    const cellrt::Cell &scan, ParamStore &store, const std::string &name,
    int64_t inputWidth, int64_t width, const WeaklyRecurrentOptions &options)
    : inputWidth(inputWidth), width(width), options(options),
      projection(store, name + ".W", inputWidth,
                 2 * width + (options.highway ? width : 0), options.layerNorm),
      forwardScan(scan, name + ".fwd", std::vector<int64_t>{width / 2, width / 2},
                  width / 2, store),
      backwardScan(CellLayer::sharing(forwardScan, /*reverse=*/true)) {
  if (width % 2)
    throw DataError(name + ": an encoder unit's width must be even, not " +
                    std::to_string(width));
  if (options.highway && inputWidth != width)
    throw DataError(name + ": the highway needs the input as wide as the "
                    "unit (" + std::to_string(inputWidth) + " != " +
                    std::to_string(width) + ")");
}

void WeaklyRecurrentEncoderLayer::forward(const float *input,
                                          const int32_t *lengths, int64_t T,
                                          int64_t B, float *output,
                                          Trace &trace, bool train) const {
  const int64_t N = T * B, h = width / 2, P = projection.outputWidth();
  trace.input = input;
  trace.lengths = lengths;
  trace.T = T;
  trace.B = B;
  projection.forward(input, N, trace.projection);
  // [x->, x<-, g->, g<-, z]: the scans take (x->, g->) and (x<-, g<-).
  const float *projected = trace.projection.out.data();
  for (int64_t k = 0; k < 4; ++k)
    copyColumns(projected, N, P, k * h, h, trace.parts[k]);
  trace.forwardStates.resize(N * h);
  trace.backwardStates.resize(N * h);
  forwardScan.forward({{trace.parts[0].data(), trace.parts[2].data()}, lengths,
                       T, B, {}, trace.forwardStates.data()},
                      trace.forwardScan, train);
  backwardScan.forward({{trace.parts[1].data(), trace.parts[3].data()},
                        lengths, T, B, {}, trace.backwardStates.data()},
                       trace.backwardScan, train);
  trace.joined.resize(N * width);
  putColumns(trace.forwardStates.data(), N, h, width, 0, trace.joined.data());
  putColumns(trace.backwardStates.data(), N, h, width, h,
             trace.joined.data());
  if (!options.highway) {
    std::copy(trace.joined.begin(), trace.joined.end(), output);
    return;
  }
  std::vector<float> z;
  copyColumns(projected, N, P, 2 * width, width, z);
  highwayForward(trace.joined.data(), input, z.data(), N * width, output);
  zeroPadding(output, lengths, T, B, width);
}

void WeaklyRecurrentEncoderLayer::backward(Trace &trace, const float *dOutput,
                                           float *dInput) const {
  const int64_t N = trace.T * trace.B, h = width / 2,
                P = projection.outputWidth();
  const float *projected = trace.projection.out.data();
  std::vector<float> dProjected(N * P, 0.f), dJoined(N * width);
  std::vector<float> dOut(dOutput, dOutput + N * width);
  zeroPadding(dOut.data(), trace.lengths, trace.T, trace.B, width);
  if (options.highway) {
    std::vector<float> z, dZ(N * width);
    copyColumns(projected, N, P, 2 * width, width, z);
    highwayBackward(dOut.data(), trace.joined.data(), trace.input, z.data(),
                    N * width, dJoined.data(), dInput, dZ.data());
    putColumns(dZ.data(), N, width, P, 2 * width, dProjected.data());
  } else {
    dJoined = dOut;
  }
  std::vector<float> dStates, dParts[4];
  for (std::vector<float> &part : dParts)
    part.assign(N * h, 0.f);
  copyColumns(dJoined.data(), N, width, 0, h, dStates);
  forwardScan.backward(trace.forwardScan, dStates.data(),
                       {dParts[0].data(), dParts[2].data()});
  copyColumns(dJoined.data(), N, width, h, h, dStates);
  backwardScan.backward(trace.backwardScan, dStates.data(),
                        {dParts[1].data(), dParts[3].data()});
  for (int64_t k = 0; k < 4; ++k)
    putColumns(dParts[k].data(), N, h, P, k * h, dProjected.data());
  projection.backward(trace.input, N, trace.projection, dProjected.data(),
                      dInput);
}

WeaklyRecurrentDecoderLayer::WeaklyRecurrentDecoderLayer(
    const cellrt::Cell &scanCell, ParamStore &store, const std::string &name,
    int64_t inputWidth, int64_t width, int64_t memoryWidth,
    int64_t attentionWidth, const WeaklyRecurrentOptions &options)
    : inputWidth(inputWidth), width(width), options(options),
      projection(store, name + ".W", inputWidth,
                 2 * width + (options.highway ? width : 0), options.layerNorm),
      scan(scanCell, name + ".scan", std::vector<int64_t>{width, width}, width,
           store),
      stateProjection(store, name + ".Ws", width, width, options.layerNorm) {
  if (options.attention) {
    // §3.2 divides the context by sqrt(d); LN(c Wc) undoes that in the
    // forward pass. Without layer norms (the ablation) the factor would
    // shrink the context 16-fold at d = 256, a model the paper never had.
    float scale = options.layerNorm ? 1.f / std::sqrt(float(width)) : 1.f;
    attention = std::make_unique<AdditiveAttention>(
        store, name + ".attention", width, memoryWidth, attentionWidth,
        AttentionOptions{options.layerNorm, scale});
    contextProjection = std::make_unique<NormedProjection>(
        store, name + ".Wc", memoryWidth, width, options.layerNorm);
  }
  if (options.highway && inputWidth != width)
    throw DataError(name + ": the highway needs the input as wide as the "
                    "unit (" + std::to_string(inputWidth) + " != " +
                    std::to_string(width) + ")");
}

void WeaklyRecurrentDecoderLayer::precompute(
    const float *memory, const int32_t *memoryLengths, int64_t Tx, int64_t B,
    AdditiveAttention::Keys &keys) const {
  if (attention)
    attention->precompute(memory, memoryLengths, Tx, B, keys);
}

void WeaklyRecurrentDecoderLayer::combine(const float *input, int64_t rows,
                                          Trace &trace, float *output) const {
  const int64_t n = rows * width;
  stateProjection.forward(trace.states.data(), rows, trace.stateProjection);
  trace.o = trace.stateProjection.out;
  if (attention) {
    contextProjection->forward(trace.contexts.data(), rows,
                               trace.contextProjection);
    for (int64_t i = 0; i < n; ++i)
      trace.o[i] += trace.contextProjection.out[i];
  }
  for (float &value : trace.o)
    value = std::tanh(value);
  if (!options.highway) {
    std::copy(trace.o.begin(), trace.o.end(), output);
    return;
  }
  std::vector<float> z;
  copyColumns(trace.projection.out.data(), rows, projection.outputWidth(),
              2 * width, width, z);
  highwayForward(trace.o.data(), input, z.data(), n, output);
}

void WeaklyRecurrentDecoderLayer::forward(const AdditiveAttention::Keys &keys,
                                          const float *input,
                                          const int32_t *lengths, int64_t T,
                                          int64_t B, float *output,
                                          Trace &trace, bool train) const {
  const int64_t N = T * B, P = projection.outputWidth();
  trace.input = input;
  trace.lengths = lengths;
  trace.T = T;
  trace.B = B;
  projection.forward(input, N, trace.projection);
  for (int64_t k = 0; k < 2; ++k)
    copyColumns(trace.projection.out.data(), N, P, k * width, width,
                trace.parts[k]);
  trace.states.resize(N * width);
  scan.forward({{trace.parts[0].data(), trace.parts[1].data()}, lengths, T, B,
                {}, trace.states.data()},
               trace.scan, train);
  // Row t * B + b attends sentence b.
  if (attention) {
    trace.rowSequences.resize(N);
    for (int64_t r = 0; r < N; ++r)
      trace.rowSequences[r] = int32_t(r % B);
    trace.contexts.resize(N * attention->contextWidth());
    attention->attend(keys, trace.states.data(), N, trace.rowSequences.data(),
                      trace.attention, trace.contexts.data());
  }
  combine(input, N, trace, output);
  zeroPadding(output, lengths, T, B, width);
}

void WeaklyRecurrentDecoderLayer::backward(AdditiveAttention::Keys &keys,
                                           Trace &trace, const float *dOutput,
                                           float *dInput,
                                           float *dMemory) const {
  const int64_t N = trace.T * trace.B, n = N * width,
                P = projection.outputWidth();
  std::vector<float> dOut(dOutput, dOutput + n), dO(n), dProjected(N * P, 0.f);
  zeroPadding(dOut.data(), trace.lengths, trace.T, trace.B, width);
  if (options.highway) {
    std::vector<float> z, dZ(n);
    copyColumns(trace.projection.out.data(), N, P, 2 * width, width, z);
    highwayBackward(dOut.data(), trace.o.data(), trace.input, z.data(), n,
                    dO.data(), dInput, dZ.data());
    putColumns(dZ.data(), N, width, P, 2 * width, dProjected.data());
  } else {
    dO = dOut;
  }
  // o = tanh(a): the same gradient reaches both projections.
  for (int64_t i = 0; i < n; ++i)
    dO[i] *= 1.f - trace.o[i] * trace.o[i];
  std::vector<float> dStates(n, 0.f);
  stateProjection.backward(trace.states.data(), N, trace.stateProjection,
                           dO.data(), dStates.data());
  if (attention)
    attentionBackward(keys, trace, dO.data(), dStates.data(), dMemory);
  std::vector<float> dParts[2];
  for (std::vector<float> &part : dParts)
    part.assign(n, 0.f);
  scan.backward(trace.scan, dStates.data(),
                {dParts[0].data(), dParts[1].data()});
  for (int64_t k = 0; k < 2; ++k)
    putColumns(dParts[k].data(), N, width, P, k * width, dProjected.data());
  projection.backward(trace.input, N, trace.projection, dProjected.data(),
                      dInput);
}

void WeaklyRecurrentDecoderLayer::step(const AdditiveAttention::Keys &keys,
                                       const float *input, int64_t rows,
                                       const int32_t *sentences,
                                       const float *states, int64_t stateRows,
                                       const int32_t *parents,
                                       float *nextStates,
                                       float *output) const {
  Trace trace;
  const int64_t P = projection.outputWidth();
  projection.forward(input, rows, trace.projection);
  for (int64_t k = 0; k < 2; ++k)
    copyColumns(trace.projection.out.data(), rows, P, k * width, width,
                trace.parts[k]);
  scan.step({{trace.parts[0].data(), trace.parts[1].data()},
             rows,
             {states},
             stateRows,
             parents,
             {nextStates},
             output}, // the scan's output (s~) is overwritten below
            nullptr);
  trace.states.assign(nextStates, nextStates + rows * width);
  if (attention) {
    trace.contexts.resize(rows * attention->contextWidth());
    attention->attend(keys, trace.states.data(), rows, sentences,
                      trace.attention, trace.contexts.data());
  }
  combine(input, rows, trace, output);
}

void WeaklyRecurrentDecoderLayer::attentionBackward(
    AdditiveAttention::Keys &keys, Trace &trace, const float *dA,
    float *dStates, float *dMemory) const {
  const int64_t N = trace.T * trace.B;
  std::vector<float> dContexts(N * attention->contextWidth(), 0.f);
  contextProjection->backward(trace.contexts.data(), N,
                              trace.contextProjection, dA, dContexts.data());
  std::vector<float> ownDMemory;
  if (!dMemory) {
    ownDMemory.assign(keys.T * keys.B * attention->contextWidth(), 0.f);
    dMemory = ownDMemory.data();
  }
  attention->backward(keys, trace.states.data(), trace.attention,
                      dContexts.data(), dMemory, dStates,
                      /*accumulateDQuery=*/true);
  attention->keysBackward(keys, dMemory);
}

} // namespace models
