//===- LayerCheck.h - Checking a layer against LibTorch and differences ---===//
//
// Each layer of models/common is checked twice: its float32 forward and
// backward against the same formula written with LibTorch autograd in
// float64, and its gradients against central differences of a scalar loss.
// The loss is L = sum(Y * G) for a fixed random G, so dL/dY = G.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_TEST_MODELS_LAYERS_LAYERCHECK_H
#define CELLC_TEST_MODELS_LAYERS_LAYERCHECK_H

#include "models/common/Math.h"

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace layercheck {

/// n values uniform in [-scale, scale].
std::vector<float> randomValues(int64_t n, models::Rng &rng,
                                float scale = 1.f);

/// A float64 tensor holding the values, with requires_grad as asked.
torch::Tensor toTorch(const std::vector<float> &values,
                      const std::vector<int64_t> &shape,
                      bool requiresGrad = false);
torch::Tensor toTorch(const float *values, const std::vector<int64_t> &shape,
                      bool requiresGrad = false);

/// The largest |ours - reference| / max(1, |reference|) over all values.
double relativeError(const float *ours, const torch::Tensor &reference);
double relativeError(const std::vector<float> &ours,
                     const torch::Tensor &reference);

/// Expects every value within `tolerance` (relative, see relativeError) of
/// the float64 reference, naming `what` on failure.
void expectClose(const std::vector<float> &ours,
                 const torch::Tensor &reference, const std::string &what,
                 double tolerance = 1e-4);

/// sum(Y * G) in double.
double weightedSum(const std::vector<float> &Y, const std::vector<float> &G);

/// Central differences of `loss` (evaluated in float32, summed in double)
/// with respect to `values`, on `points` coordinates (the largest analytic
/// gradients and some random ones), compared with `gradient`.
void expectFiniteDifferences(const std::function<double()> &loss,
                             std::vector<float> &values,
                             const std::vector<float> &gradient,
                             const std::string &what, int points = 6,
                             float step = 1e-2f, double tolerance = 2e-2);

/// expectFiniteDifferences for every parameter of `store` against its grad.
void expectParamDifferences(const std::function<double()> &loss,
                            models::ParamStore &store, int points = 6);

/// Visits the index of every value of a time-major [T, B, width] array at a
/// time step t >= lengths[b], B = lengths.size().
void forEachPadded(const std::vector<int32_t> &lengths, int64_t T,
                   int64_t width, const std::function<void(int64_t)> &visit);
/// Large finite junk in the padding of seq, for masking to hide.
void fillPadding(std::vector<float> &seq, const std::vector<int32_t> &lengths,
                 int64_t T, int64_t width);
/// Expects the padding of grad to be exactly 0.
void expectZeroPadding(const std::vector<float> &grad,
                       const std::vector<int32_t> &lengths, int64_t T,
                       int64_t width, const std::string &what);

} // namespace layercheck

#endif
