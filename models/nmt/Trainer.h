//===- models/nmt/Trainer.h - Training, validation, translation -*- C++ -*-===//

#ifndef CELLC_MODELS_NMT_TRAINER_H
#define CELLC_MODELS_NMT_TRAINER_H

#include "models/common/CheckpointFile.h"
#include "models/common/Data.h"
#include "models/common/Optimizers.h"
#include "models/common/RunFiles.h"
#include "models/common/RunLog.h"
#include "models/common/RunStart.h"
#include "models/common/Subword.h"
#include "models/nmt/AttentionStats.h"
#include "models/nmt/Model.h"
#include "models/nmt/Numbers.h"
#include "models/nmt/Options.h"

#include <cmath>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace nmt {
// The driver is built from the layer library in models/common.
using namespace models;

/// Raw text <-> tokens for one trained model.
struct Codec {
  std::string mode; // numbers | space | bpe
  Subword srcSpm, tgtSpm;
  std::vector<std::string> source(const std::string &line) const;
  std::vector<std::string> target(const std::string &line) const;
  /// Target tokens -> the tokenised text BLEU is computed on during
  /// validation (multi-bleu style against the reference line).
  std::string tokenized(const std::vector<std::string> &tokens) const;
  /// Target tokens -> output text (numbers: German words are joined).
  std::string detokenized(const std::vector<std::string> &tokens) const;
};

struct TrainState : models::RunState {
  int64_t badEpochs = 0;
  double bestBleu = -1, lr = 0;
  /// The current epoch's target tokens so far.
  int64_t epochTokens = 0;
  int64_t skippedUpdates = 0;
  std::vector<double> epochLoss, validPerplexity, validBleu;
};

/// Whether an epoch counts as progress under --plateau-metric `metric`
/// (bleu, ppl or either), given whether it set a new best BLEU, the
/// perplexities of the epochs before it and its own.
bool madeProgress(const std::string &metric, bool bleuImproved,
                  const std::vector<double> &earlierPpl, double ppl);

struct TrainData {
  std::vector<std::string> trainSrc, trainTgt, validSrc, validTgt;
};

/// What a validation measured. The attention's summary (AttentionStats.h:
/// its argmax's distance from the diagonal, its entropy over uniform's) is
/// NaN for a model without one attention.
struct Validation {
  double ppl = 0, bleu = 0;
  double attentionOffDiagonal = NAN, attentionEntropy = NAN;
};

class Session : public models::RunIdentity {
public:
  /// A new model for `data` (vocabularies and subword models from its
  /// training side).
  Session(const TrainOptions &options, const TrainData &data);
  /// Reads a checkpoint (DataError on a missing or corrupt file).
  static std::unique_ptr<Session> load(const std::string &path);
  /// A session of its own with this one's options, codec, vocabularies,
  /// parameters and state, as load() of a checkpoint saved now would give
  /// (without the file): another thread's model to decode with.
  std::unique_ptr<Session> copy() const;
  /// Rebuilds the model with its products in `precision` ("f32" or "bf16"),
  /// keeping every parameter and Adam moment: one checkpoint measured both
  /// ways (bench/nmt-floor --precision).
  void changePrecision(const std::string &precision);
  /// Writes path.tmp, then renames it over path (DataError on failure,
  /// `path` untouched).
  void save(const std::string &path) const;
  /// The checkpoint payload (CheckpointFile frames it).
  std::string serialize() const;

  /// Trains until the epochs, maxUpdates or early stopping end it.
  void train(const TrainData &data);
  /// Mean per-token loss and BLEU (multi-bleu on tokenised text) on a
  /// parallel set; with `attention`, where the model's attention looks
  /// while it force-decodes the set (nothing added for a model without
  /// one).
  void validate(const std::vector<std::string> &src,
                const std::vector<std::string> &ref, double &perplexity,
                double &bleu, int64_t beam,
                AttentionStats *attention = nullptr);
  /// Detokenised translations of raw lines, batched `batchSize` at a time;
  /// `tokenizedOut` (optional) gets the tokenised form.
  std::vector<std::string>
  translate(const std::vector<std::string> &lines, int64_t beam,
            float lengthPenalty, int64_t batchSize,
            std::vector<std::string> *tokenizedOut = nullptr,
            int64_t *wordsOut = nullptr);
  std::vector<Example> examples(const std::vector<std::string> &src,
                                const std::vector<std::string> &tgt,
                                bool filter) const;

  TrainOptions options;
  Codec codec;
  Vocab srcVocab, tgtVocab;
  std::unique_ptr<TranslationModel> model;
  Adam adam;
  TrainState state;
  /// Called after every backward pass, before the update is checked and
  /// applied (tests poison gradients with it).
  std::function<void(int64_t)> beforeUpdate;
  /// Called after every update with the update count and the batch's mean
  /// loss (tests use it).
  std::function<void(int64_t, double)> onUpdate;

private:
  Session() = default;
  /// load()'s reading of a checkpoint's payload (`path` names it in errors).
  static std::unique_ptr<Session>
  fromCheckpoint(const models::CheckpointBytes &file, const std::string &path);
  void build();
  struct EpochRun {
    bool stopped = false; // --max-updates reached
    int64_t words = 0;
    double seconds = 0;
  };
  EpochRun runEpoch(const std::vector<Example> &exs, const TrainData &data,
                    RunLog &log);
  /// A batch's summed loss and sizes, over every rank (Team).
  struct BatchTotals {
    double loss = 0;
    int64_t targetTokens = 0, sourceTokens = 0, sentences = 0;
  };
  /// Zeroes the gradients, then leaves the batch's in them (this rank's
  /// shard, summed over the ranks).
  BatchTotals lossAndGradients(const std::vector<Example> &exs,
                               const std::vector<int64_t> &indices);
  /// Validates on rank 0 and gives every rank its results.
  Validation validateOnLeader(const TrainData &data);
  /// --valid-every: validation in the middle of an epoch, logged only.
  void validateNow(const TrainData &data, RunLog &log);
  void finishEpoch(const TrainData &data, RunLog &log, const EpochRun &run);
  /// False (after a warning) when the update must be skipped; throws when
  /// it must stop training. `gradNorm` is gradientNorm() of the update.
  bool updateIsFinite(const BatchTotals &batch, double gradNorm,
                      int64_t batchIndex, int64_t batches, std::ostream &log);
  /// Saves at a scheduled point; a failure is reported and training goes on
  /// (the previous checkpoint is intact), unless `final`.
  void saveOrWarn(const std::string &path, std::ostream &log, bool final);
};

/// The training and validation text of `options` (the numbers task or the
/// files, with errors naming the file and line).
TrainData loadTrainData(const TrainOptions &options);

} // namespace nmt

#endif
