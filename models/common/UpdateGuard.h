//===- models/common/UpdateGuard.h - Only finite updates --------*- C++ -*-===//
//
// A NaN or Inf loss or gradient (a learning rate far too large, a bad
// batch) would turn every parameter into NaN, and a run that went on would
// save and report a broken model as if it had trained. Every driver checks
// each update with these before applying it, and a checkpoint is never
// written with a non-finite parameter (Serialize.h's writeParams).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_UPDATEGUARD_H
#define CELLC_MODELS_COMMON_UPDATEGUARD_H

#include "models/common/Param.h"

#include <string>
#include <vector>

namespace models {

/// What makes an update with this loss and gradient norm non-finite ("the
/// loss is NaN", "the gradient of parameter W is not finite"), or "" when
/// it may be applied.
std::string nonfiniteUpdate(double loss, double gradNorm,
                            const std::vector<Param *> &params);

/// The error a run stops with before applying the update described by
/// `where` ("update 12 (epoch 1, batch 3 of 40)") that `what` (from
/// nonfiniteUpdate) makes non-finite; `hint` ends the message.
std::string stoppedBeforeUpdate(const std::string &where,
                                const std::string &what,
                                const std::string &hint = "");

} // namespace models

#endif
