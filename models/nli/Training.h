//===- models/nli/Training.h - Training and evaluating NLI models -*- C++
//-*-===//

#ifndef CELLC_MODELS_NLI_TRAINING_H
#define CELLC_MODELS_NLI_TRAINING_H

#include "models/common/Data.h"
#include "models/common/Optimizers.h"
#include "models/common/RunLog.h"
#include "models/common/RunStart.h"
#include "models/nli/Corpus.h"
#include "models/nli/Model.h"
#include "models/nli/Options.h"

#include <array>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace nli {

/// Accuracy and the confusion matrix [gold][predicted].
struct Evaluation {
  int64_t correct = 0, total = 0;
  std::array<std::array<int64_t, 3>, 3> confusion{};
  double accuracy() const { return total ? double(correct) / total : 0; }
};

/// The pairs a run trains and validates on.
struct TrainData {
  std::vector<Pair> train, valid;
};

/// The --train and --valid splits of `options` (DataError naming the file).
TrainData loadTrainData(const TrainOptions &options);

struct TrainState : models::RunState {
  /// Epochs since the best validation accuracy (--patience).
  int64_t badEpochs = 0;
  double bestAccuracy = -1;
  /// The current epoch's pairs so far.
  int64_t epochPairs = 0;
};

/// A model with its vocabulary and training state; saved and resumed as a
/// whole, down to the position in the epoch (the batch order of an epoch is
/// drawn from --seed and the epoch number).
class Session : public models::RunIdentity {
public:
  /// A new model for `options`, its vocabulary built from `data.train`.
  Session(const TrainOptions &options, const TrainData &data);
  /// A saved session (DataError naming the file when it is not one).
  static std::unique_ptr<Session> load(const std::string &path);
  /// Atomically (CheckpointFile.h); DataError on failure, `path` untouched.
  void save(const std::string &path) const;

  /// Trains until --epochs, --max-updates or --patience end it, validating
  /// and saving after each epoch (the best validation accuracy also to
  /// OUT.best), and every --save-every updates.
  void train(const TrainData &data);
  Evaluation evaluate(const std::vector<Pair> &pairs);
  std::vector<int32_t> predict(const std::vector<Pair> &pairs);

  Model &getModel() { return *model; }

  TrainOptions options;
  TrainState state;
  /// Called after each epoch's checkpoint is written, and after every
  /// update with the update count (tests stop a run there, as a kill would).
  std::function<void(int64_t epoch)> afterEpoch;
  std::function<void(int64_t update)> afterUpdate;

private:
  Session() = default;
  void build();
  std::vector<Example> encode(const std::vector<Pair> &pairs) const;
  /// Trains the rest of the current epoch (to its end, or --max-updates).
  void runEpoch(const std::vector<Example> &examples, std::ostream &log);
  /// Validates, keeps the best, saves, and counts --patience.
  void finishEpoch(const TrainData &data, models::RunLog &log, double seconds);
  void saveOrWarn(const std::string &path, std::ostream &log, bool final);

  models::Vocab vocab;
  std::unique_ptr<Model> model;
  models::Adam adam;
  /// How many words --embeddings covered, said when training starts.
  std::string embeddingReport;
};

/// `nli train` as the command line asked for it.
using TrainRequest = models::RunRequest<TrainOptions>;
/// How nli runs start and resume (models/common/RunStart.h).
using RunRules = models::RunRules<Session, TrainOptions, TrainData>;
RunRules runRules();

/// The session to train and its data, or null (with a message) when the
/// resumed run has already finished.
std::unique_ptr<Session> prepareTraining(const TrainRequest &request,
                                         TrainData &data);

} // namespace nli

#endif
