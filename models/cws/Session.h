//===- models/cws/Session.h - A segmenter and its training ------*- C++ -*-===//
//
// A Session is what a checkpoint holds: the options, the character
// vocabulary, the model with its Adam state, and the training state down to
// the position in the epoch and the dropout generator, so that a resumed run
// continues exactly as the uninterrupted one would have (the batch order of
// an epoch is drawn from --seed and the epoch number).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_CWS_SESSION_H
#define CELLC_MODELS_CWS_SESSION_H

#include "models/common/Optimizers.h"
#include "models/common/RunLog.h"
#include "models/common/RunStart.h"
#include "models/cws/Options.h"
#include "models/cws/Score.h"

#include <functional>
#include <iosfwd>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace cws {

struct TrainData {
  std::vector<Sentence> train, valid;
  /// The training words: validation counts the others as OOV.
  WordSet trainWords;
};

/// The training and validation sentences of `options` (validation: --valid,
/// or the last --valid-fraction of --train). DataError naming the file.
TrainData loadTrainData(const TrainOptions &options);

struct TrainState : models::RunState {
  double bestF1 = -1;
  /// The current epoch's sentences so far.
  int64_t epochSentences = 0;
  /// Training time of all epochs so far, validation excluded.
  double trainSeconds = 0;
  std::vector<double> epochLoss, validF1;
};

class Session : public models::RunIdentity {
public:
  /// A new model for `data` (the vocabulary from its training sentences).
  Session(const TrainOptions &options, const TrainData &data);
  /// Reads a checkpoint (DataError naming the file when it is missing,
  /// corrupt or another driver's).
  static std::unique_ptr<Session> load(const std::string &path);
  /// Atomically (CheckpointFile.h); DataError on failure, `path` untouched.
  void save(const std::string &path) const;
  std::string serialize() const;

  /// Trains until --epochs; the best validation F1 is kept in OUT.best.
  void train(const TrainData &data);
  /// The words of each sentence, decoded `batchSize` sentences at a time;
  /// white space in raw input stays a word boundary. With `hideListed`,
  /// gold sentences' listed words are hidden from the model as
  /// dropListedWords does (a fixed draw, the same every time).
  std::vector<std::vector<std::string>>
  segment(const std::vector<Sentence> &sentences, int64_t batchSize = 64,
          float hideListed = 0.f);
  /// The bakeoff's scores of segmenting gold sentences. Validation hides
  /// --dict-dropout of the listed gold words: the list holds every word of
  /// the corpus it came from, new text has words it lacks.
  ScoreCounts evaluate(const std::vector<Sentence> &gold,
                       const WordSet &trainWords, float hideListed = 0.f);

  TrainOptions options;
  Vocab vocab;
  /// The --dict words (empty without).
  Lexicon lexicon;
  std::unique_ptr<Model> model;
  models::Adam adam;
  TrainState state;
  /// Called after every update with the update count and the batch's mean
  /// loss (tests stop a run with it).
  std::function<void(int64_t, double)> onUpdate;

private:
  Session() = default;
  void build();
  /// Trains the rest of the current epoch; returns its chars/s.
  double runEpoch(const std::vector<Encoded> &train, std::ostream &log);
  void finishEpoch(const TrainData &data, models::RunLog &log, double rate);
  /// Zeroes the gradients and leaves the batch's in them (this rank's
  /// shard, combined over the ranks); {loss, sentences, characters} of the
  /// whole batch.
  std::vector<double> lossAndGradients(const std::vector<Encoded> &train,
                                       const std::vector<int64_t> &indices);
  /// Saves at a scheduled point; a failure is reported and training goes on
  /// (the previous checkpoint is intact), unless `final`.
  void saveOrWarn(const std::string &path, std::ostream &log, bool final);
};

/// `cws train` as the command line asked for it (no --resume-from).
using TrainRequest = models::RunRequest<TrainOptions>;

/// How cws runs start and resume (models/common/RunStart.h): a run has
/// finished at its --epochs, and a larger --epochs extends it.
using RunRules = models::RunRules<Session, TrainOptions, TrainData>;
RunRules runRules();

/// The session to train and its data, or null (with a message) when the
/// resumed run has already finished. Throws DataError naming the file or
/// the contradicting options.
std::unique_ptr<Session> prepareTraining(const TrainRequest &request,
                                         TrainData &data);

} // namespace cws

#endif
