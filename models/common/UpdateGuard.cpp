//===- models/common/UpdateGuard.cpp - Only finite updates ----------------===//

#include "models/common/UpdateGuard.h"

#include <cmath>

namespace models {

std::string nonfiniteUpdate(double loss, double gradNorm,
                            const std::vector<Param *> &params) {
  if (!std::isfinite(loss))
    return std::string("the loss is ") + (std::isnan(loss) ? "NaN" : "Inf");
  if (std::isfinite(gradNorm))
    return "";
  for (Param *p : params)
    if (!std::isfinite(gradientNorm({p})))
      return "the gradient of parameter " + p->name + " is not finite";
  return "the gradient is not finite";
}

std::string stoppedBeforeUpdate(const std::string &where,
                                const std::string &what,
                                const std::string &hint) {
  return where + ": " + what +
         "; stopped before applying it (the last checkpoint is intact; a "
         "smaller --lr or a --clip may help" +
         (hint.empty() ? "" : "; " + hint) + ")";
}

} // namespace models
