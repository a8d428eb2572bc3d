//===- models/common/Optimizers.h - Adam, Adadelta, SGD ---------*- C++ -*-===//
//
// One update of the trainable parameters from their accumulated gradients,
// after rescaling the gradients so that their global L2 norm is at most
// clipNorm. The optimisers keep their per-value state in Param::m and
// Param::v, so a checkpoint that saves those resumes exactly.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_OPTIMIZERS_H
#define CELLC_MODELS_COMMON_OPTIMIZERS_H

#include "models/common/Param.h"

#include <memory>
#include <string>

namespace models {

class Optimizer {
public:
  virtual ~Optimizer() = default;
  float lr = 1e-3f;
  /// <= 0: no clipping.
  float clipNorm = 5.0f;
  /// Updates applied so far (Adam's bias correction needs it).
  int64_t step = 0;

  /// Applies one update to every parameter that is not frozen; returns the
  /// gradient norm before clipping.
  double update(const std::vector<Param *> &params) {
    return update(params, gradientNorm(params));
  }
  /// The same with the gradient norm already computed.
  double update(const std::vector<Param *> &params, double norm);

  /// "adam", "adadelta" or "sgd".
  virtual const char *name() const = 0;

protected:
  /// Once per update, before the parameters.
  virtual void beginStep() {}
  /// Updates one parameter; its gradient is to be multiplied by gradScale.
  virtual void apply(Param &param, float gradScale) = 0;
};

/// Kingma & Ba (2015).
class Adam : public Optimizer {
public:
  Adam() { lr = 5e-4f; }
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  const char *name() const override { return "adam"; }

protected:
  void beginStep() override;
  void apply(Param &param, float gradScale) override;

private:
  float correction1 = 1, correction2 = 1;
};

/// Zeiler (2012): per-value step sizes from running averages of squared
/// gradients and squared updates; lr 1.0 is the paper's method.
class Adadelta : public Optimizer {
public:
  Adadelta() { lr = 1.0f; }
  float rho = 0.95f, eps = 1e-6f;
  const char *name() const override { return "adadelta"; }

protected:
  void apply(Param &param, float gradScale) override;
};

/// Plain stochastic gradient descent.
class Sgd : public Optimizer {
public:
  Sgd() { lr = 0.1f; }
  const char *name() const override { return "sgd"; }

protected:
  void apply(Param &param, float gradScale) override;
};

/// The optimiser of that name with its default learning rate; nullptr for
/// an unknown name.
std::unique_ptr<Optimizer> makeOptimizer(const std::string &name);

} // namespace models

#endif
