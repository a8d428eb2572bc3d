//===- models/nli/Training.cpp - Training and evaluating NLI models -------===//

#include "models/nli/Training.h"

#include "models/common/CheckpointFile.h"
#include "models/common/Init.h"
#include "models/common/Cells.h"
#include "models/common/Progress.h"
#include "models/common/Serialize.h"
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
// Version 2 adds the cell's source.
const char *const kPayloadTag = "cellc-nli-2";
const char *const kPayloadTagWithoutCellSource = "cellc-nli-1";

void writeOptions(ByteWriter &w, const TrainOptions &o) {
  for (const std::string *text :
       {&o.train, &o.valid, &o.embeddings, &o.model.kind, &o.model.cell,
        &o.out})
    w.str(*text);
  for (int64_t number : {o.vocabMax, o.minCount, o.model.vocab, o.model.emb,
                         o.model.hidden, o.batch, o.epochs, o.maxUpdates})
    w.u64(uint64_t(number));
  for (double number : {double(o.lr), double(o.clip), double(o.initScale),
                        double(o.model.dropout)})
    w.f64(number);
  w.u64(o.seed);
  w.u64(uint64_t(o.freezeEmbeddings) | uint64_t(o.lowercase) << 1 |
        uint64_t(o.model.squashStates) << 2 |
        uint64_t(o.init == "fan_in") << 3);
  w.str(o.model.cellSource);
}

TrainOptions readOptions(ByteReader &r, bool withCellSource) {
  TrainOptions o;
  for (std::string *text : {&o.train, &o.valid, &o.embeddings, &o.model.kind,
                            &o.model.cell, &o.out})
    *text = r.str();
  for (int64_t *number : {&o.vocabMax, &o.minCount, &o.model.vocab,
                          &o.model.emb, &o.model.hidden, &o.batch, &o.epochs,
                          &o.maxUpdates})
    *number = int64_t(r.u64());
  o.lr = float(r.f64());
  o.clip = float(r.f64());
  o.initScale = float(r.f64());
  o.model.dropout = float(r.f64());
  o.seed = r.u64();
  uint64_t flags = r.u64();
  o.freezeEmbeddings = flags & 1;
  o.lowercase = flags & 2;
  // Unset in checkpoints from before 2026-11-28, which attended raw states.
  o.model.squashStates = flags & 4;
  o.init = flags & 8 ? "fan_in" : "paper";
  if (withCellSource)
    o.model.cellSource = r.str();
  return o;
}

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

Session::Session(const TrainOptions &opts, const std::vector<Pair> &train,
                 std::ostream &log)
    : options(opts), dropoutRng(opts.seed * 7919 + 13) {
  std::vector<std::vector<std::string>> sentences;
  for (const Pair &pair : train) {
    sentences.push_back(pair.premise);
    sentences.push_back(pair.hypothesis);
  }
  vocab = Vocab::build(sentences, options.vocabMax, options.minCount);
  options.model.vocab = vocab.size();
  build();
  model->initialize(options.seed,
                    driverInitScheme(options.init, options.initScale));
  if (!options.embeddings.empty()) {
    EmbeddingCoverage coverage = model->embedding().loadPretrained(
        options.embeddings, vocab.getTokens(), Vocab::Eos + 1);
    log << "embeddings: " << coverage.describe(options.embeddings)
        << std::endl;
  }
}

void Session::build() {
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

void Session::save(const std::string &path) const {
  ByteWriter w;
  w.str(kPayloadTag);
  writeOptions(w, options);
  w.strings(vocab.getTokens());
  writeParams(w, model->params().all());
  w.u64(uint64_t(adam.step));
  w.u64(uint64_t(epoch));
  w.u64(uint64_t(updates));
  w.f64(bestValid);
  for (uint64_t word : dropoutRng.s)
    w.u64(word);
  w.str("END");
  writeCheckpointFile(path, w.bytes);
}

std::unique_ptr<Session> Session::load(const std::string &path) {
  CheckpointBytes file = readCheckpointFile(path);
  ByteReader r{file.payload, path};
  std::string tag = r.str();
  if (tag != kPayloadTag && tag != kPayloadTagWithoutCellSource)
    throw DataError(path + ": not an nli checkpoint");
  std::unique_ptr<Session> session(new Session());
  session->options = readOptions(r, tag == kPayloadTag);
  session->vocab = Vocab::fromTokens(r.strings());
  session->build();
  readParams(r, session->model->params().all());
  session->adam.step = int64_t(r.u64());
  session->epoch = int64_t(r.u64());
  session->updates = int64_t(r.u64());
  session->bestValid = r.f64();
  for (uint64_t &word : session->dropoutRng.s)
    word = r.u64();
  if (r.str() != "END")
    throw DataError(path + ": corrupt checkpoint");
  return session;
}

std::pair<double, int64_t>
Session::runEpoch(const std::vector<Example> &examples) {
  Rng orderRng(options.seed * 1000003 + uint64_t(epoch) * 7919 + 1);
  auto batches = batchOrder(examples, options.batch, orderRng);
  ProgressBar bar("epoch " + std::to_string(epoch + 1),
                  int64_t(batches.size()), "pairs", options.progress);
  std::vector<Param *> trainable = model->params().trainable();
  Team &team = Team::world();
  double lossSum = 0;
  int64_t pairs = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    zeroGrads(trainable);
    // Under mpirun this rank's shard; the model's gradient is that of the
    // mean over its pairs.
    std::vector<int64_t> mine = team.shard(batches[i]);
    std::vector<double> totals = {0, double(mine.size())};
    if (!mine.empty())
      totals[0] = model->loss(makeBatch(examples, mine), true, &dropoutRng);
    team.combineBatch(trainable, totals);
    double norm = gradientNorm(trainable);
    // totals[0] sums the loss over the batch's pairs.
    std::string what = nonfiniteUpdate(totals[0], norm, trainable);
    if (!what.empty())
      throw DataError(stoppedBeforeUpdate(
          "update " + std::to_string(updates + 1) + " (epoch " +
              std::to_string(epoch + 1) + ", batch " + std::to_string(i + 1) +
              " of " + std::to_string(batches.size()) + ")",
          what));
    lossSum += totals[0];
    adam.update(trainable, norm);
    ++updates;
    pairs += int64_t(totals[1]);
    char extra[64];
    std::snprintf(extra, sizeof extra, "loss %.3f", lossSum / double(pairs));
    bar.update(int64_t(i + 1), pairs, extra);
    if (options.maxUpdates > 0 && updates >= options.maxUpdates)
      break;
  }
  bar.finish();
  return {pairs ? lossSum / double(pairs) : 0, pairs};
}

void Session::train(const std::vector<Pair> &trainPairs,
                    const std::vector<Pair> &validPairs, std::ostream &log) {
  std::vector<Example> examples = encode(trainPairs);
  Team &team = Team::world();
  team.requireSame(model->params().count(), "the parameter count");
  team.requireSame(int64_t(examples.size()), "the training pairs");
  team.requireSameProgress(updates, epoch, 0);
  team.broadcastValues(model->params().all());
  team.separateStreams(dropoutRng);
  while (epoch < options.epochs &&
         !(options.maxUpdates > 0 && updates >= options.maxUpdates)) {
    ProgressBar clock("", 0, "", false);
    auto [loss, pairs] = runEpoch(examples);
    double seconds = clock.elapsedSeconds();
    // Rank 0 evaluates; every rank needs its accuracy for "best".
    Evaluation valid;
    if (team.leader())
      valid = evaluate(validPairs);
    team.broadcast(valid);
    ++epoch;
    bool best = valid.accuracy() > bestValid;
    if (best)
      bestValid = valid.accuracy();
    char line[256];
    std::snprintf(line, sizeof line,
                  "epoch %lld loss %.4f valid accuracy %.2f%%%s (%.0f s, "
                  "%.0f pairs/s)",
                  (long long)epoch, loss, 100 * valid.accuracy(),
                  best ? " (best)" : "", seconds,
                  double(pairs) / std::max(seconds, 1e-9));
    log << line << std::endl;
    if (events)
      events->event("epoch", {{"epoch", epoch},
                              {"update", updates},
                              {"train_loss", loss},
                              {"valid_accuracy", valid.accuracy()},
                              {"pairs_per_s", double(pairs) /
                                                  std::max(seconds, 1e-9)},
                              {"best", best ? 1 : 0}});
    if (team.leader()) {
      save(options.out);
      if (best)
        save(options.out + ".best");
    }
    if (afterEpoch)
      afterEpoch(epoch);
  }
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
