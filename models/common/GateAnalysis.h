//===- models/common/GateAnalysis.h - What a cell's gates do ----*- C++ -*-===//
//
// The ATR paper's two analyses of a trained cell, for any cell whose probes
// (cellc --probe) give its gates:
//   - Figure 3: the input and forget gates' means per position and their
//     Pearson correlation;
//   - Eq. 10 and Figure 4: a cell whose new state has the additive form
//     h_t = i_t * p_t + f_t * h_{t-1} with h_0 = 0 is a weighted sum of its
//     candidates, h_t = sum_{k<=t} g_k^t * p_k with
//     g_k^t = i_k * prod_{l=k+1..t} f_l (element-wise), so each word can be
//     linked to the earlier word with the largest weight.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_GATEANALYSIS_H
#define CELLC_MODELS_COMMON_GATEANALYSIS_H

#include <cstdint>
#include <vector>

namespace models {

/// Pearson's r of two series of equal length (0 when either is constant).
double pearson(const std::vector<double> &a, const std::vector<double> &b);

/// The Eq. 10 weights of one sequence of an additive cell: from its input
/// and forget gates i, f [T, H] (row t = step t), for every step t and
/// earlier-or-same step k the vector g_k^t [H].
class AdditiveWeights {
public:
  AdditiveWeights(const float *i, const float *f, int64_t T, int64_t H);

  int64_t steps() const { return T; }
  /// g_k^t, k <= t.
  std::vector<double> weight(int64_t t, int64_t k) const;
  /// The mean of g_k^t over units: one number per (t, k) for the arcs.
  double meanWeight(int64_t t, int64_t k) const;
  /// sum_{k<=t} g_k^t * p_k for candidates p [T, H]: the state h_t when the
  /// cell is additive and started from zero.
  std::vector<double> state(int64_t t, const float *p) const;
  /// meanWeight(t, k) for every t and k <= t, [t][k], in one pass over
  /// the products of forget gates.
  std::vector<std::vector<double>> meanWeights() const;
  /// For each step t >= 1, the earlier step k < t with the largest mean
  /// weight (Figure 4's arc); -1 at t = 0.
  std::vector<int64_t> strongestEarlier() const;
  /// The same from meanWeights()' result.
  static std::vector<int64_t>
  strongestEarlier(const std::vector<std::vector<double>> &meanWeights);

private:
  const float *i, *f;
  int64_t T, H;
};

} // namespace models

#endif
