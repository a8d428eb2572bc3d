//===- InitParams.cpp - Params drawn from a seed --------------------------===//
//
// Cell::initParams and initArray: every param's values come from a stream
// of its own, seeded from the caller's seed and the param's name, so a
// param's values do not depend on which other params the cell has or in
// which order they are drawn. Only integer operations, IEEE double +, -,
// *, / and sqrt are used (log is computed here, not by the C library), and
// this file is compiled without fused multiply-adds, so a seed gives the
// same floats on every platform and through every API
// (docs/cell-language.md, "Initialisers").
//
//===----------------------------------------------------------------------===//

#include "cellrt/Runtime.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace cellrt;

namespace {

//===----------------------------------------------------------------------===//
// The generator: xoshiro256** seeded by SplitMix64
//===----------------------------------------------------------------------===//

uint64_t rotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/// FNV-1a, 64 bits, of the param's name: what makes its stream its own.
uint64_t hashName(const std::string &name) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

uint64_t splitMix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// xoshiro256** (Blackman and Vigna 2018), its state four outputs of
/// SplitMix64 started at seed XOR FNV-1a(name), as the authors advise.
class Stream {
public:
  Stream(uint64_t seed, const std::string &name) {
    uint64_t mixer = seed ^ hashName(name);
    for (uint64_t &word : state)
      word = splitMix64(mixer);
  }

  uint64_t next() {
    uint64_t result = rotateLeft(state[1] * 5, 7) * 9;
    uint64_t shifted = state[1] << 17;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= shifted;
    state[3] = rotateLeft(state[3], 45);
    return result;
  }

  /// Uniform in [0, 1): the top 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  /// Uniform in [-1, 1).
  double symmetric() { return 2 * uniform() - 1; }

  /// Standard normal by Marsaglia's polar form of Box-Muller: a pair per
  /// accepted point, the first then the second.
  double normal() {
    if (spare) {
      double value = *spare;
      spare.reset();
      return value;
    }
    double u, v, s;
    do {
      u = symmetric();
      v = symmetric();
      s = u * u + v * v;
    } while (s >= 1 || s == 0);
    double factor = std::sqrt(-2 * logarithm(s) / s);
    spare = v * factor;
    return u * factor;
  }

private:
  /// The natural logarithm of s in (0, 1) from exact steps and a series,
  /// so that it does not depend on the C library: s = m * 2^e with m in
  /// [sqrt(1/2), sqrt(2)), log m = 2 atanh(t), t = (m - 1) / (m + 1),
  /// |t| < 0.172, summed to t^25 (the next term is under 1e-19).
  static double logarithm(double s) {
    int exponent;
    double m = std::frexp(s, &exponent);
    if (m < 0.70710678118654752440) {
      m *= 2;
      --exponent;
    }
    double t = (m - 1) / (m + 1), t2 = t * t, series = 0;
    for (int k = 25; k >= 1; k -= 2)
      series = series * t2 + 1.0 / k;
    return exponent * 0.69314718055994530942 + 2 * t * series;
  }

  uint64_t state[4];
  std::optional<double> spare;
};

//===----------------------------------------------------------------------===//
// The schemes
//===----------------------------------------------------------------------===//

void fillUniform(Stream &stream, double bound, float *data, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    data[i] = static_cast<float>(bound * stream.symmetric());
}

/// Applies the reflection I - 2 v v^T to rows [k, rows) of `column`.
void reflect(const std::vector<double> &v, int64_t k, int64_t rows,
             double *column) {
  double dot = 0;
  for (int64_t r = k; r < rows; ++r)
    dot += v[r - k] * column[r];
  for (int64_t r = k; r < rows; ++r)
    column[r] -= 2 * v[r - k] * dot;
}

/// The columns of `a` ([rows, cols], rows >= cols, stored column by column
/// so that the reflections run along memory) replaced by the orthonormal
/// Q of its QR factorisation by Householder reflections, each column's
/// sign made that of R's diagonal entry, so that Q is the one with a
/// positive diagonal R (torch.nn.init.orthogonal_ does the same with
/// LAPACK's QR).
void orthonormalize(std::vector<double> &a, int64_t rows, int64_t cols) {
  std::vector<std::vector<double>> reflectors;
  std::vector<double> diagonal;
  auto column = [&](int64_t c) { return a.data() + c * rows; };
  for (int64_t k = 0; k < cols; ++k) {
    const double *x = column(k);
    double norm = 0;
    for (int64_t r = k; r < rows; ++r)
      norm += x[r] * x[r];
    norm = std::sqrt(norm);
    // R's entry is -sign(x0) |x|: the reflection that avoids cancellation.
    double alpha = x[k] > 0 ? -norm : norm;
    std::vector<double> v(x + k, x + rows);
    v[0] -= alpha;
    double vNorm = 0;
    for (double element : v)
      vNorm += element * element;
    vNorm = std::sqrt(vNorm);
    if (vNorm > 0)
      for (double &element : v)
        element /= vNorm;
    for (int64_t c = k; c < cols; ++c)
      reflect(v, k, rows, column(c));
    diagonal.push_back(alpha);
    reflectors.push_back(std::move(v));
  }
  // Q = H_0 ... H_{cols-1} applied to the first cols columns of I.
  std::fill(a.begin(), a.end(), 0.0);
  for (int64_t k = 0; k < cols; ++k)
    column(k)[k] = 1;
  for (int64_t k = cols - 1; k >= 0; --k)
    for (int64_t c = 0; c < cols; ++c)
      reflect(reflectors[k], k, rows, column(c));
  for (int64_t c = 0; c < cols; ++c)
    if (diagonal[c] < 0)
      for (int64_t r = 0; r < rows; ++r)
        column(c)[r] = -column(c)[r];
}

/// An [R, C] matrix with orthonormal columns (R >= C) or rows (R < C),
/// from a standard normal matrix drawn row by row.
void fillOrthogonal(Stream &stream, int64_t rows, int64_t cols, float *data) {
  bool wide = rows < cols;
  int64_t tall = wide ? cols : rows, narrow = wide ? rows : cols;
  // Element (r, c) of the [R, C] matrix in the column-by-column storage of
  // the tall matrix factored: itself, or its transpose when it is wide.
  auto index = [&](int64_t r, int64_t c) {
    return wide ? r * cols + c : c * rows + r;
  };
  std::vector<double> a(rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      a[index(r, c)] = stream.normal();
  orthonormalize(a, tall, narrow);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      data[r * cols + c] = static_cast<float>(a[index(r, c)]);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string shapeText(const std::vector<DimExpr> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + shape[i].str();
  return text + "]";
}

//===----------------------------------------------------------------------===//
// Cell::initParams: the params' shapes against the plan
//===----------------------------------------------------------------------===//

/// Binds the plan's dims from the params' shapes: equations of one unknown
/// until nothing changes (`4*H` = 8 gives H = 2).
std::map<std::string, int64_t>
bindParamDims(const Plan &plan,
              const std::map<std::string, MutableArray> &params) {
  std::map<std::string, int64_t> dims;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto &[name, array] : params) {
      const ParamDecl *param = plan.findParam(name);
      if (!param || param->shape.size() != array.shape.size())
        continue;
      for (size_t i = 0; i < param->shape.size(); ++i) {
        const DimExpr &expr = param->shape[i];
        int64_t known = expr.getConstant();
        const DimExpr::Term *unknown = nullptr;
        int unknowns = 0;
        for (const DimExpr::Term &term : expr.getTerms()) {
          auto it = dims.find(term.first);
          if (it == dims.end()) {
            unknown = &term;
            ++unknowns;
          } else {
            known += term.second * it->second;
          }
        }
        int64_t rest = array.shape[i] - known;
        if (unknowns == 1 && rest % unknown->second == 0 &&
            rest / unknown->second > 0) {
          dims[unknown->first] = rest / unknown->second;
          changed = true;
        }
      }
    }
  }
  return dims;
}

/// An error unless every array names a param of the plan, with data and
/// the declared shape under one binding of the dims.
Status checkParamShapes(const Plan &plan,
                        const std::map<std::string, MutableArray> &params) {
  std::map<std::string, int64_t> dims = bindParamDims(plan, params);
  for (const auto &[name, array] : params) {
    const ParamDecl *param = plan.findParam(name);
    if (!param)
      return Status::error("initParams: cell '" + plan.cellName +
                           "' has no param '" + name + "'");
    if (!array.data)
      return Status::error("initParams: param '" + name + "' has no data");
    std::vector<int64_t> expected;
    for (const DimExpr &extent : param->shape)
      expected.push_back(extent.evaluate(dims).value_or(-1));
    if (array.shape == expected)
      continue;
    bool bound =
        std::find(expected.begin(), expected.end(), -1) == expected.end();
    return Status::error("initParams: param '" + name + "' has shape " +
                         shapeText(array.shape) + " but is declared " +
                         shapeText(param->shape) +
                         (bound ? " = " + shapeText(expected) : ""));
  }
  return Status::success();
}

} // namespace

Status cellrt::initArray(const InitScheme &scheme, const std::string &name,
                         uint64_t seed, const MutableArray &array) {
  const std::vector<int64_t> &shape = array.shape;
  if (shape.empty() || shape.size() > 2)
    return Status::error("initArray: param '" + name +
                         "' must be a vector or a matrix, got shape " +
                         shapeText(shape));
  int64_t count = 1;
  for (int64_t extent : shape) {
    if (extent < 1)
      return Status::error("initArray: param '" + name + "' has shape " +
                           shapeText(shape));
    count *= extent;
  }
  if (std::string problem = checkInitValue(scheme); !problem.empty())
    return Status::error("initArray: param '" + name + "': " + problem);
  if (std::string problem = checkInitRank(scheme, shape.size());
      !problem.empty())
    return Status::error("initArray: param '" + name + "': " + problem);
  Stream stream(seed, name);
  // fan_in reads a matrix's columns, fan_out its rows; a vector's length
  // serves both.
  int64_t fanIn = shape.back(), fanOut = shape.front();
  switch (scheme.kind) {
  case InitScheme::Kind::None:
    return Status::success();
  case InitScheme::Kind::Constant:
    std::fill(array.data, array.data + count, static_cast<float>(scheme.value));
    return Status::success();
  case InitScheme::Kind::Uniform:
    fillUniform(stream, scheme.value, array.data, count);
    return Status::success();
  case InitScheme::Kind::FanIn:
    fillUniform(stream, 1 / std::sqrt(static_cast<double>(fanIn)), array.data,
                count);
    return Status::success();
  case InitScheme::Kind::FanOut:
    fillUniform(stream, 1 / std::sqrt(static_cast<double>(fanOut)), array.data,
                count);
    return Status::success();
  case InitScheme::Kind::Normal:
    for (int64_t i = 0; i < count; ++i)
      array.data[i] = static_cast<float>(scheme.value * stream.normal());
    return Status::success();
  case InitScheme::Kind::Orthogonal:
    fillOrthogonal(stream, shape[0], shape[1], array.data);
    return Status::success();
  }
  return Status::success();
}

Status Cell::initParams(const std::map<std::string, MutableArray> &params,
                        uint64_t seed, const InitScheme &fallback) const {
  if (std::string problem = checkInitValue(fallback); !problem.empty())
    return Status::error("initParams: the fallback: " + problem);
  if (Status status = checkParamShapes(plan, params); !status.ok())
    return status;
  // Every param is checked before any is written.
  for (const auto &[name, array] : params) {
    const ParamDecl *param = plan.findParam(name);
    const InitScheme &scheme = param->init.isNone() ? fallback : param->init;
    if (std::string problem = checkInitRank(scheme, array.shape.size());
        !problem.empty())
      return Status::error("initParams: param '" + name +
                           "' has no "
                           "initialiser of its own, and the fallback " +
                           scheme.str() + " cannot draw it: " + problem);
  }
  for (const auto &[name, array] : params) {
    const ParamDecl *param = plan.findParam(name);
    const InitScheme &scheme = param->init.isNone() ? fallback : param->init;
    if (Status status = initArray(scheme, name, seed, array); !status.ok())
      return status;
  }
  return Status::success();
}
