//===- models/nli/Training.cpp - Training and evaluating NLI models -------===//

#include "models/nli/Training.h"

#include "models/common/Init.h"
#include "models/common/Cells.h"
#include "models/common/Progress.h"
#include "models/common/Team.h"
#include "models/common/UpdateGuard.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <ostream>

namespace nli {
using namespace models;

namespace {

/// Batches of `size` examples in an order drawn from rng, each sorted by
/// premise length within windows of 20 batches (less padding).
std::vector<std::vector<int64_t>> batchOrder(const std::vector<Example> &all,
                                             int64_t size, Rng &rng) {
  std::vector<int64_t> order(all.size());
  std::iota(order.begin(), order.end(), 0);
  shuffle(order, rng);
  const size_t window = size_t(size) * 20;
  for (size_t start = 0; start < order.size(); start += window) {
    auto end = order.begin() + std::min(order.size(), start + window);
    std::stable_sort(order.begin() + start, end, [&](int64_t a, int64_t b) {
      return all[a].premise.size() < all[b].premise.size();
    });
  }
  std::vector<std::vector<int64_t>> batches;
  for (size_t start = 0; start < order.size(); start += size_t(size))
    batches.emplace_back(order.begin() + start,
                         order.begin() + std::min(order.size(),
                                                  start + size_t(size)));
  shuffle(batches, rng);
  return batches;
}
} // namespace

Session::Session(const TrainOptions &opts, const TrainData &data)
    : options(opts) {
  runId = newRunId();
  state.dropoutRng = Rng(opts.seed * 7919 + 13);
  std::vector<std::vector<std::string>> sentences;
  for (const Pair &pair : data.train) {
    sentences.push_back(pair.premise);
    sentences.push_back(pair.hypothesis);
  }
  vocab = Vocab::build(sentences, options.vocabMax, options.minCount);
  build();
  model->initialize(options.seed,
                    driverInitScheme(options.init, options.initScale));
  if (!options.embeddings.empty()) {
    EmbeddingCoverage coverage = model->embedding().loadPretrained(
        options.embeddings, vocab.getTokens(), Vocab::Eos + 1);
    embeddingReport = "embeddings: " + coverage.describe(options.embeddings);
  }
}

void Session::build() {
  options.model.vocab = vocab.size();
  options.model.squashStates = options.betweenLayers == "tanh";
  const cellrt::Cell *cell = nullptr;
  if (options.model.kind == "attention") {
    // A .cell file's text is kept in the checkpoint: the model loads after
    // the file moves or changes.
    if (options.model.cellSource.empty())
      options.model.cellSource = readCellSource(options.model.cell);
    cell = &loadCell(options.model.cell, options.model.cellSource);
  }
  model = std::make_unique<Model>(options.model, cell);
  model->embedding().setFrozen(options.freezeEmbeddings);
  adam.lr = options.lr;
  adam.clipNorm = options.clip;
}

std::vector<Example> Session::encode(const std::vector<Pair> &pairs) const {
  std::vector<Example> examples;
  for (const Pair &pair : pairs)
    examples.push_back(
        {vocab.encode(pair.premise), vocab.encode(pair.hypothesis), pair.label});
  return examples;
}

void Session::saveOrWarn(const std::string &path, std::ostream &log,
                         bool final) {
  if (Team::world().leader())
    models::saveOrWarn("nli", [&] { save(path); }, log, final);
}

void Session::runEpoch(const std::vector<Example> &examples,
                       std::ostream &log) {
  Rng orderRng(options.seed * 1000003 + uint64_t(state.epoch) * 7919 + 1);
  auto batches = batchOrder(examples, options.batch, orderRng);
  const int64_t count = int64_t(batches.size());
  ProgressBar bar("epoch " + std::to_string(state.epoch + 1),
                  count - state.batchInEpoch, "pairs", options.progress);
  std::vector<Param *> trainable = model->params().trainable();
  Team &team = Team::world();
  for (int64_t i = state.batchInEpoch, done = 1; i < count; ++i, ++done) {
    zeroGrads(trainable);
    // Under mpirun this rank's shard; the model's gradient is that of the
    // mean over its pairs.
    std::vector<int64_t> mine = team.shard(batches[i]);
    std::vector<double> totals = {0, double(mine.size())};
    if (!mine.empty())
      totals[0] =
          model->loss(makeBatch(examples, mine), true, &state.dropoutRng);
    team.combineBatch(trainable, totals);
    double norm = gradientNorm(trainable);
    // totals[0] sums the loss over the batch's pairs.
    std::string what = nonfiniteUpdate(totals[0], norm, trainable);
    if (!what.empty())
      throw DataError(stoppedBeforeUpdate(
          "update " + std::to_string(state.updates + 1) + " (epoch " +
              std::to_string(state.epoch + 1) + ", batch " +
              std::to_string(i + 1) + " of " + std::to_string(count) + ")",
          what));
    adam.update(trainable, norm);
    ++state.updates;
    state.batchInEpoch = i + 1;
    state.epochLossSum += totals[0];
    state.epochPairs += int64_t(totals[1]);
    char extra[64];
    std::snprintf(extra, sizeof extra, "loss %.3f",
                  state.epochLossSum / double(std::max<int64_t>(
                                           state.epochPairs, 1)));
    bar.update(done, state.epochPairs, extra);
    if (options.saveEvery > 0 && state.updates % options.saveEvery == 0)
      saveOrWarn(options.out, log, false);
    if (afterUpdate)
      afterUpdate(state.updates);
    if (options.maxUpdates > 0 && state.updates >= options.maxUpdates)
      break;
  }
  bar.finish();
}

void Session::finishEpoch(const TrainData &data, RunLog &runLog,
                          double seconds) {
  Team &team = Team::world();
  // Rank 0 evaluates; every rank needs its accuracy for "best".
  Evaluation valid;
  if (team.leader())
    valid = evaluate(data.valid);
  team.broadcast(valid);
  double loss = state.epochLossSum / double(std::max<int64_t>(
                                         state.epochPairs, 1));
  double pairsPerSecond = double(state.epochPairs) / std::max(seconds, 1e-9);
  bool best = valid.accuracy() > state.bestAccuracy;
  if (best)
    state.bestAccuracy = valid.accuracy();
  state.badEpochs = best ? 0 : state.badEpochs + 1;
  ++state.epoch;
  char line[256];
  std::snprintf(line, sizeof line,
                "epoch %lld loss %.4f valid accuracy %.2f%%%s (%.0f s, "
                "%.0f pairs/s)",
                (long long)state.epoch, loss, 100 * valid.accuracy(),
                best ? " (best)" : "", seconds, pairsPerSecond);
  // On stderr too, also with --no-progress (which hides only the bar).
  runLog.summaries() << line << std::endl;
  runLog.event("epoch", {{"epoch", state.epoch},
                         {"update", state.updates},
                         {"train_loss", loss},
                         {"valid_accuracy", valid.accuracy()},
                         {"pairs_per_s", pairsPerSecond},
                         {"best", best ? 1 : 0}});
  bool outOfPatience =
      options.patience > 0 && state.badEpochs >= options.patience;
  if (outOfPatience)
    runLog.summaries() << "no better validation accuracy in "
                       << state.badEpochs << " epochs (--patience "
                       << options.patience << "): stopping" << std::endl;
  state.finished =
      outOfPatience || state.epoch >= options.epochs ||
      (options.maxUpdates > 0 && state.updates >= options.maxUpdates);
  state.batchInEpoch = 0;
  state.epochLossSum = 0;
  state.epochPairs = 0;
  std::ostream &log = runLog.text();
  if (best)
    saveOrWarn(options.out + ".best", log, false);
  saveOrWarn(options.out, log, state.finished);
}

void Session::train(const TrainData &data) {
  std::vector<Example> examples = encode(data.train);
  Team &team = Team::world();
  team.requireSame(model->params().count(), "the parameter count");
  team.requireSame(int64_t(examples.size()), "the training pairs");
  team.requireSameProgress(state.updates, state.epoch, state.batchInEpoch);
  team.broadcastValues(model->params().all());
  team.separateStreams(state.dropoutRng);
  std::unique_ptr<RunLog> runLog = openRunLog("nli", *this);
  if (!embeddingReport.empty())
    runLog->text() << embeddingReport << std::endl;
  runLog->summaries()
      << data.train.size() << " training pairs, " << data.valid.size()
      << " validation pairs; model " << options.model.kind
      << (options.model.kind == "attention" ? " (" + options.model.cell + ")"
                                            : "")
      << ", " << model->params().count() << " parameters ("
      << model->recurrentParameterCount() << " recurrent)" << std::endl;
  if (state.epoch >= options.epochs ||
      (options.maxUpdates > 0 && state.updates >= options.maxUpdates))
    state.finished = true;
  while (!state.finished) {
    ProgressBar clock("", 0, "", false);
    runEpoch(examples, runLog->text());
    finishEpoch(data, *runLog, clock.elapsedSeconds());
    if (afterEpoch)
      afterEpoch(state.epoch);
  }
  runLog->summaries() << "best validation accuracy "
                      << 100 * state.bestAccuracy << "%, saved in "
                      << options.out << ".best" << std::endl;
}

Evaluation Session::evaluate(const std::vector<Pair> &pairs) {
  std::vector<int32_t> predicted = predict(pairs);
  Evaluation result;
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (pairs[i].label < 0)
      continue;
    ++result.total;
    result.correct += predicted[i] == pairs[i].label;
    ++result.confusion[pairs[i].label][predicted[i]];
  }
  return result;
}

std::vector<int32_t> Session::predict(const std::vector<Pair> &pairs) {
  std::vector<Example> examples = encode(pairs);
  for (Example &example : examples)
    example.label = -1;
  std::vector<int32_t> labels;
  const size_t size = 256;
  for (size_t start = 0; start < examples.size(); start += size) {
    std::vector<int64_t> indices(std::min(size, examples.size() - start));
    std::iota(indices.begin(), indices.end(), int64_t(start));
    std::vector<int32_t> batchLabels;
    model->loss(makeBatch(examples, indices), false, nullptr, &batchLabels);
    labels.insert(labels.end(), batchLabels.begin(), batchLabels.end());
  }
  return labels;
}

} // namespace nli

namespace nli {

TrainData loadTrainData(const TrainOptions &options) {
  return {readSplit(options.train, options.lowercase),
          readSplit(options.valid, options.lowercase)};
}

namespace {

/// A run has finished at its --epochs, --max-updates or --patience; a
/// larger --epochs extends it.
bool continues(Session &session, const TrainRequest &request,
               const std::string &path) {
  if (!session.state.finished)
    return true; // a killed run goes on exactly, its patience count too
  if (!request.given.count("epochs") && !request.given.count("max-updates")) {
    std::fprintf(stderr, "nli: %s has finished training\n", path.c_str());
    return false;
  }
  // Extended: the epochs given again start a new count.
  session.state.finished = false;
  session.state.badEpochs = 0;
  return true;
}

} // namespace

RunRules runRules() { return {"nli", continues, loadTrainData}; }

std::unique_ptr<Session> prepareTraining(const TrainRequest &request,
                                         TrainData &data) {
  return models::prepareTraining(runRules(), request, data);
}

} // namespace nli
