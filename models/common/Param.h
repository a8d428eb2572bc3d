//===- models/common/Param.h - Learned parameters and their store -*- C++ -*-===//
//
// Every layer of the library registers its parameters in a ParamStore under
// a dotted name (`encoder.fwd.W`); optimisers, checkpoints and gradient
// checks see the model as that flat list.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_PARAM_H
#define CELLC_MODELS_COMMON_PARAM_H

#include "cellrt/InitScheme.h"

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace models {

/// A learned parameter: value, gradient and two optimiser slots (Adam's
/// moments, Adadelta's running averages). A frozen parameter (pretrained
/// embeddings kept fixed) gets no gradient and no update.
struct Param {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> value, grad, m, v;
  bool frozen = false;
  /// How the param starts when a model is initialised (Init.h): a cell's
  /// declared initialiser (`bf: [H] = 1`), a layer norm's identity; none:
  /// the driver's --init scheme.
  cellrt::InitScheme init;
  int64_t size() const { return int64_t(value.size()); }
};

/// Owns a model's parameters. Addresses stay valid as parameters are added
/// (a deque), so layers keep Param pointers.
class ParamStore {
public:
  /// A zero parameter; throws std::invalid_argument on a duplicate name.
  Param &add(const std::string &name, std::vector<int64_t> shape);
  /// Every parameter, in the order they were added.
  std::vector<Param *> all();
  /// The parameters an optimiser updates (not frozen).
  std::vector<Param *> trainable();
  /// nullptr when there is none of that name.
  Param *find(const std::string &name);
  /// Number of values in all parameters, or in the trainable ones.
  int64_t count() const;
  int64_t trainableCount() const;

private:
  std::deque<Param> params;
};

void zeroGrads(const std::vector<Param *> &params);

/// The global L2 norm of every parameter's gradient (one vectorised pass).
/// It is NaN or Inf when any gradient is.
double gradientNorm(const std::vector<Param *> &params);

} // namespace models

#endif
