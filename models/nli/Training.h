//===- models/nli/Training.h - Training and evaluating NLI models -*- C++ -*-===//

#ifndef CELLC_MODELS_NLI_TRAINING_H
#define CELLC_MODELS_NLI_TRAINING_H

#include "models/common/Data.h"
#include "models/common/Optimizers.h"
#include "models/common/RunLog.h"
#include "models/nli/Corpus.h"
#include "models/nli/Model.h"

#include <array>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace nli {

struct TrainOptions {
  std::string train, valid;   // splits, e.g. DATA/snli/train_small
  std::string embeddings;     // GloVe/word2vec text file (optional)
  bool freezeEmbeddings = false, lowercase = true;
  int64_t vocabMax = 0, minCount = 1;
  ModelConfig model;
  float lr = 5e-4f, clip = 5.0f, initScale = 0.1f;
  /// paper (uniform +-initScale) or fan_in (models/common/Init.h).
  std::string init = "paper";
  int64_t batch = 128, epochs = 10, maxUpdates = 0;
  uint64_t seed = 1;
  std::string out = "nli.ckpt";
  bool progress = true, force = false;
};

/// Accuracy and the confusion matrix [gold][predicted].
struct Evaluation {
  int64_t correct = 0, total = 0;
  std::array<std::array<int64_t, 3>, 3> confusion{};
  double accuracy() const { return total ? double(correct) / total : 0; }
};

/// A model with its vocabulary and training state; saved and resumed as a
/// whole.
class Session {
public:
  /// A new model for `options`, its vocabulary built from `train`.
  Session(const TrainOptions &options, const std::vector<Pair> &train,
          std::ostream &log);
  /// A saved session (DataError naming the file when it is not one).
  static std::unique_ptr<Session> load(const std::string &path);
  void save(const std::string &path) const;

  /// Trains the remaining epochs, validating and saving after each (the
  /// best validation accuracy also to OUT.best).
  void train(const std::vector<Pair> &trainPairs,
             const std::vector<Pair> &validPairs, std::ostream &log);
  Evaluation evaluate(const std::vector<Pair> &pairs);
  std::vector<int32_t> predict(const std::vector<Pair> &pairs);

  Model &getModel() { return *model; }
  const TrainOptions &getOptions() const { return options; }
  int64_t epochsDone() const { return epoch; }
  double bestAccuracy() const { return bestValid; }
  int64_t updatesDone() const { return updates; }

  /// Called after each epoch's checkpoint is written (tests stop a run
  /// there, as a kill would).
  std::function<void(int64_t epoch)> afterEpoch;
  /// When set, each epoch is also one JSON object there (OUT.jsonl).
  models::RunLog *events = nullptr;

private:
  Session() = default;
  void build();
  std::vector<Example> encode(const std::vector<Pair> &pairs) const;
  /// The mean loss and the number of pairs trained on.
  std::pair<double, int64_t> runEpoch(const std::vector<Example> &examples);

  TrainOptions options;
  models::Vocab vocab;
  std::unique_ptr<Model> model;
  models::Adam adam;
  models::Rng dropoutRng;
  int64_t epoch = 0, updates = 0;
  double bestValid = -1;
};

} // namespace nli

#endif
