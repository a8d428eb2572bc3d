//===- models/cws/Training.cpp - The training loop ------------------------===//
//
// Epochs of shuffled batches of similar lengths, Adam updates with the
// learning rate lr * lrDecay^epoch (the paper halves it every epoch),
// validation F1 after every epoch, OUT.best for the best of them, OUT after
// every epoch and every --save-every updates.
//
//===----------------------------------------------------------------------===//

#include "models/common/Progress.h"
#include "models/common/RunFiles.h"
#include "models/common/RunStart.h"
#include "models/common/Team.h"
#include "models/common/UpdateGuard.h"
#include "models/cws/Session.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>

namespace cws {

namespace {

std::string format(const char *pattern, ...)
    __attribute__((format(printf, 1, 2)));

std::string format(const char *pattern, ...) {
  char text[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(text, sizeof text, pattern, args);
  va_end(args);
  return text;
}

} // namespace

void Session::saveOrWarn(const std::string &path, std::ostream &log,
                         bool final) {
  if (!models::Team::world().leader())
    return;
  models::saveOrWarn("cws", [&] { save(path); }, log, final);
}

double Session::runEpoch(const std::vector<Encoded> &train,
                         std::ostream &log) {
  auto params = model->params();
  Rng orderRng(options.seed * 1000003 + uint64_t(state.epoch) * 7919 + 1);
  auto order = trainingBatches(train, options.batch, orderRng);
  int64_t batches = int64_t(order.size()), chars = 0;
  models::ProgressBar bar("epoch " + std::to_string(state.epoch + 1),
                          batches - state.batchInEpoch, "chars",
                          options.progress);
  adam.lr = float(options.lr * std::pow(double(options.lrDecay),
                                        double(state.epoch)));
  for (int64_t bi = state.batchInEpoch, done = 1; bi < batches; ++bi, ++done) {
    std::vector<double> totals = lossAndGradients(train, order[bi]);
    double loss = totals[0];
    double norm = models::gradientNorm(params);
    std::string what = models::nonfiniteUpdate(loss, norm, params);
    if (!what.empty())
      throw models::DataError(models::stoppedBeforeUpdate(
          format("update %lld (epoch %lld, batch %lld of %lld)",
                 (long long)state.updates + 1, (long long)state.epoch + 1,
                 (long long)bi + 1, (long long)batches),
          what));
    adam.update(params, norm);
    ++state.updates;
    state.batchInEpoch = bi + 1;
    state.epochLossSum += loss;
    state.epochSentences += int64_t(totals[1]);
    chars += int64_t(totals[2]);
    bar.update(done, chars,
               format("loss %.3f", state.epochLossSum /
                                       double(state.epochSentences)));
    if (options.saveEvery > 0 && state.updates % options.saveEvery == 0)
      saveOrWarn(options.out, log, false);
    if (onUpdate)
      onUpdate(state.updates, loss / totals[1]);
  }
  bar.finish();
  double seconds = bar.elapsedSeconds();
  state.trainSeconds += seconds;
  return double(chars) / std::max(seconds, 1e-9);
}

std::vector<double>
Session::lossAndGradients(const std::vector<Encoded> &train,
                          const std::vector<int64_t> &indices) {
  auto params = model->params();
  models::Team &team = models::Team::world();
  models::zeroGrads(params);
  // Under mpirun this rank's shard; the model's gradient is that of the
  // mean over its sentences.
  std::vector<int64_t> mine = team.shard(indices);
  std::vector<double> totals = {0, 0, 0};
  if (!mine.empty()) {
    CharBatch batch = makeCharBatch(train, mine);
    dropListedWords(batch, train, mine, options.dictDropout,
                    state.dropoutRng);
    totals = {model->loss(batch, true, &state.dropoutRng), double(batch.B),
              double(batch.chars)};
  }
  team.combineBatch(params, totals);
  return totals;
}

void Session::finishEpoch(const TrainData &data, models::RunLog &runLog,
                          double rate) {
  std::ostream &log = runLog.text();
  models::Team &team = models::Team::world();
  // Rank 0 validates; every rank needs the F1 for "best".
  ScoreCounts valid;
  if (team.leader())
    valid = evaluate(data.valid, data.trainWords, options.dictDropout);
  team.broadcast(valid);
  double f1 = valid.f1();
  state.epochLoss.push_back(
      state.epochSentences ? state.epochLossSum / double(state.epochSentences)
                           : 0);
  state.validF1.push_back(f1);
  bool improved = f1 > state.bestF1;
  runLog.event("epoch", {{"epoch", state.epoch + 1},
                         {"update", state.updates},
                         {"train_loss", state.epochLoss.back()},
                         {"valid_f1", f1},
                         {"valid_precision", valid.precision()},
                         {"valid_recall", valid.recall()},
                         {"valid_oov_recall", valid.oovRecall()},
                         {"chars_per_s", rate},
                         {"lr", double(adam.lr)},
                         {"best", improved ? 1 : 0}});
  // On stderr too, also with --no-progress (which hides only the bar).
  runLog.summaries()
      << format("epoch %lld: train loss %.4f, valid F1 %.4f (P %.4f R "
                "%.4f, OOV recall %.4f)%s, %.0f chars/s, lr %.3g, %.0f s "
                "training in all",
                (long long)state.epoch + 1, state.epochLoss.back(), f1,
                valid.precision(), valid.recall(), valid.oovRecall(),
                improved ? " best" : "", rate, double(adam.lr),
                state.trainSeconds)
      << std::endl;
  if (improved)
    state.bestF1 = f1;
  ++state.epoch;
  state.batchInEpoch = 0;
  state.epochLossSum = 0;
  state.epochSentences = 0;
  // Epochs since the best F1 (the checkpoint keeps every epoch's).
  int64_t sinceBest =
      int64_t(state.validF1.size()) - 1 -
      int64_t(std::max_element(state.validF1.begin(), state.validF1.end()) -
              state.validF1.begin());
  bool outOfPatience = options.patience > 0 && sinceBest >= options.patience;
  if (outOfPatience)
    runLog.summaries() << format("no better validation F1 in %lld epochs "
                                 "(--patience %lld): stopping",
                                 (long long)sinceBest,
                                 (long long)options.patience)
                       << std::endl;
  state.finished = outOfPatience || state.epoch >= options.epochs;
  if (improved)
    saveOrWarn(options.out + ".best", log, false);
  saveOrWarn(options.out, log, state.finished);
}

void Session::train(const TrainData &data) {
  std::vector<Encoded> train = encodeAll(data.train, vocab, lexicon);
  models::Team &team = models::Team::world();
  team.requireSame(model->parameterCount(), "the parameter count");
  team.requireSame(int64_t(train.size()), "the training sentences");
  team.requireSameProgress(state.updates, state.epoch, state.batchInEpoch);
  team.broadcastValues(model->params());
  team.separateStreams(state.dropoutRng);
  std::unique_ptr<models::RunLog> runLogFile =
      models::openRunLog("cws", *this);
  models::RunLog &runLog = *runLogFile;
  std::ostream &log = runLog.text();
  runLog.summaries()
      << format("cell %s: %lld parameters (%lld in the recurrent layers), "
                "%lld characters in the vocabulary, %lld words in --dict, "
                "%zu training and %zu validation sentences",
                options.cell.c_str(), (long long)model->parameterCount(),
                (long long)model->recurrentParameterCount(),
                (long long)vocab.size(), (long long)lexicon.words().size(),
                data.train.size(), data.valid.size())
      << std::endl;
  while (!state.finished && state.epoch < options.epochs) {
    double rate = runEpoch(train, log);
    finishEpoch(data, runLog, rate);
  }
  state.finished = true;
}

} // namespace cws
