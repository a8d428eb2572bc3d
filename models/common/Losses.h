//===- models/common/Losses.h - Softmax cross-entropy -----------*- C++ -*-===//
//
// The classification loss of the NLI classifier and the NMT output layer,
// and the log-probabilities a decoder ranks words by. (The CRF's losses are
// in Crf.h.)
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_COMMON_LOSSES_H
#define CELLC_MODELS_COMMON_LOSSES_H

#include <cstdint>
#include <vector>

namespace models {

/// A bias [classes] that the loss adds to every row of logits in its own
/// pass over them (the output layer leaves it: Linear::forwardWithoutBias),
/// and where its gradient, the column sums of dLogits, adds up (may be
/// null). One pass over the [rows, classes] logits fewer each way, and
/// they are the largest array of an NMT update.
struct LogitBias {
  const float *value = nullptr;
  float *grad = nullptr;
};

/// Summed cross-entropy of softmax(logits) [rows, classes] against targets,
/// skipping rows whose mask is 0 (mask may be null). Writes dLogits =
/// scale * (softmax - onehot) for counted rows and 0 for skipped ones, and
/// leaves log-probabilities in logProbs (resized). Throws std::out_of_range
/// for a target outside [0, classes).
double softmaxCrossEntropy(const float *logits, int64_t rows, int64_t classes,
                           const int32_t *targets, const uint8_t *mask,
                           float scale, float *dLogits,
                           std::vector<float> &logProbs);

/// softmaxCrossEntropy that turns `logits` themselves into the
/// log-probabilities: no copy of a [rows, classes] array (the NMT output
/// layer's are tens of MB).
double softmaxCrossEntropyInPlace(float *logits, int64_t rows, int64_t classes,
                                  const int32_t *targets, const uint8_t *mask,
                                  float scale, float *dLogits);

/// softmaxCrossEntropyInPlace with label smoothing `smoothing` (eps): a
/// counted row's loss is (1 - eps) * -log p(target) + eps * the mean of
/// -log p(j) over all `classes` j (PyTorch's CrossEntropyLoss(
/// label_smoothing); Szegedy et al. 2016: the target distribution is
/// (1 - eps) onehot + eps / classes), and dLogits = scale * (softmax -
/// that distribution). Skipped (padded) rows count nothing. eps = 0 is
/// softmaxCrossEntropyInPlace, bit for bit. With `bias`, the logits are
/// logits + bias.value (and become those log-probabilities). dLogits may
/// be `logits` itself (exactly; no other overlap): the gradient then takes
/// the log-probabilities' place (training needs only the loss), one
/// [rows, classes] array fewer written. With dLogits, `roundedDLogits`
/// (may be null; ignored without dLogits) gets it rounded to bf16
/// (cellrt::roundToBf16) in the same pass, for a bf16 output layer's
/// backward (KeepRoundedOperands::lend).
double smoothedCrossEntropyInPlace(float *logits, int64_t rows, int64_t classes,
                                   const int32_t *targets, const uint8_t *mask,
                                   float smoothing, float scale, float *dLogits,
                                   LogitBias bias = {},
                                   uint16_t *roundedDLogits = nullptr);

/// Log-softmax of each row of logits [rows, classes] (+ bias [classes]
/// when given), in place.
void logSoftmax(float *logits, int64_t rows, int64_t classes,
                const float *bias = nullptr);

/// The arg max of each row of scores [rows, classes].
std::vector<int32_t> argmaxRows(const float *scores, int64_t rows,
                                int64_t classes);

} // namespace models

#endif
