//===- models/nmt/Training.cpp - The training loop ------------------------===//
//
// Epochs of shuffled token-based batches, Adam updates, periodic and
// end-of-epoch checkpoints, validation and early stopping. Every update is
// checked for a non-finite loss or gradient before Adam applies it, so a
// NaN never reaches the parameters or a checkpoint.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/Trainer.h"

#include "models/common/RunFiles.h"
#include "models/common/RunStart.h"
#include "models/common/Team.h"
#include "models/common/UpdateGuard.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <unistd.h>

namespace nmt {

namespace {
using Clock = std::chrono::steady_clock;

std::string clock(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "--:--";
  int64_t s = int64_t(seconds);
  char text[32];
  if (s >= 3600)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld",
                  (long long)(s / 3600), (long long)(s / 60 % 60),
                  (long long)(s % 60));
  else
    std::snprintf(text, sizeof text, "%02lld:%02lld", (long long)(s / 60),
                  (long long)(s % 60));
  return text;
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// "cell atr" for RNNSearch, else e.g. "cell atr (gnmt 2+2 layers)".
std::string architectureText(const ModelConfig &model) {
  if (model.arch == "srnmt")
    return "srnmt " + std::to_string(model.encLayers) + "+" +
           std::to_string(model.decLayers) + " units" +
           (model.noLayerNorm ? ", no layer norm" : "") +
           (model.noHighway ? ", no highway" : "") +
           (model.singleAttention ? ", single attention" : "");
  std::string text = model.arch;
  if (isCyclicArchitecture(model.arch))
    text += ", context " + model.context;
  else if (isDeepArchitecture(model.arch))
    text += " " + std::to_string(model.encLayers) + "+" +
            std::to_string(model.decLayers) + " layers" +
            (model.arch == "deep" && model.deepFirst == "backward"
                 ? ", first layer backward"
                 : "");
  else if (model.arch != "rnnsearch")
    text += " encoder";
  if (model.shareCell)
    text += ", shared cell";
  if (model.tieOutput)
    text += ", tied output";
  if (!model.cell2.empty())
    text += ", cell2 " + model.cell2;
  if (model.betweenLayers == "raw" && model.arch != "rnnsearch")
    text += ", raw states between layers";
  return "cell " + model.cell +
         (text == "rnnsearch" ? "" : " (" + text + ")");
}

} // namespace

bool Session::updateIsFinite(const BatchTotals &batch, double gradNorm,
                             int64_t batchIndex, int64_t batches,
                             std::ostream &log) {
  std::string what =
      models::nonfiniteUpdate(batch.loss, gradNorm, model->params());
  if (what.empty())
    return true;
  std::string where = "update " + std::to_string(state.updates + 1) +
                      " (epoch " + std::to_string(state.epoch + 1) +
                      ", batch " + std::to_string(batchIndex + 1) + " of " +
                      std::to_string(batches) + ", " +
                      std::to_string(batch.sentences) + " sentences)";
  if (!options.skipNonfinite)
    throw DataError(models::stoppedBeforeUpdate(
        where, what, "--skip-nonfinite skips such updates"));
  ++state.skippedUpdates;
  log << "skipped " << where << ": " << what << std::endl;
  if (Team::world().leader())
    std::fprintf(stderr, "nmt: warning: skipped %s: %s\n", where.c_str(),
                 what.c_str());
  return false;
}

void Session::saveOrWarn(const std::string &path, std::ostream &log,
                         bool final) {
  if (!Team::world().leader())
    return;
  models::saveOrWarn("nmt", [&] { save(path); }, log, final);
}

Session::EpochRun Session::runEpoch(const std::vector<Example> &exs,
                                    const TrainData &data, RunLog &runLog) {
  std::ostream &log = runLog.text();
  auto params = model->params();
  Team &team = Team::world();
  bool bar = options.progress && isatty(2) && team.leader();
  Rng orderRng(options.seed * 1000003 + uint64_t(state.epoch) * 7919 + 1);
  auto order = makeBatchOrder(exs, options.maxTokens, orderRng);
  auto start = Clock::now();
  auto lastDraw = start - std::chrono::seconds(1);
  EpochRun run;
  int64_t first = state.batchInEpoch, batches = int64_t(order.size());
  char line[512];
  for (int64_t bi = state.batchInEpoch; bi < batches; ++bi) {
    BatchTotals batch = lossAndGradients(exs, order[bi]);
    double loss = batch.loss;
    if (beforeUpdate)
      beforeUpdate(state.updates + 1);
    state.batchInEpoch = bi + 1;
    // One pass over the gradients serves the check and the clipping.
    double gradNorm = gradientNorm(params);
    if (!updateIsFinite(batch, gradNorm, bi, batches, log))
      continue;
    adam.lr = float(state.lr);
    adam.update(params, gradNorm);
    ++state.updates;
    state.epochLossSum += loss;
    state.epochTokens += batch.targetTokens;
    run.words += batch.targetTokens + batch.sourceTokens;
    double epochMean = state.epochLossSum / double(state.epochTokens);
    if (onUpdate)
      onUpdate(state.updates, loss / double(batch.targetTokens));
    double elapsed = secondsSince(start);
    double wps = run.words / std::max(elapsed, 1e-9);
    double done = double(bi + 1 - first) / double(batches - first);
    if (options.logEvery > 0 && state.updates % options.logEvery == 0) {
      std::snprintf(line, sizeof line,
                    "epoch %lld update %lld loss %.4f ppl %.2f %.0f "
                    "words/s lr %.3g",
                    (long long)state.epoch + 1, (long long)state.updates,
                    epochMean, std::exp(epochMean), wps, state.lr);
      log << line << std::endl;
      runLog.event("update", {{"epoch", state.epoch + 1},
                              {"update", state.updates},
                              {"loss", epochMean},
                              {"ppl", std::exp(epochMean)},
                              {"words_per_s", wps},
                              {"lr", state.lr}});
    }
    if (options.validEvery > 0 && state.updates % options.validEvery == 0)
      validateNow(data, runLog);
    if (bar && Clock::now() - lastDraw > std::chrono::milliseconds(200)) {
      lastDraw = Clock::now();
      int width = 24, filled = int(done * width);
      std::string barText(size_t(filled), '#');
      barText.resize(size_t(width), ' ');
      std::fprintf(stderr,
                   "\repoch %lld |%s| %3.0f%% upd %lld loss %.3f %.0f "
                   "words/s ETA %s  ",
                   (long long)state.epoch + 1, barText.c_str(), done * 100,
                   (long long)state.updates, epochMean, wps,
                   clock(elapsed / done - elapsed).c_str());
    }
    bool last = options.maxUpdates > 0 && state.updates >= options.maxUpdates;
    if (last ||
        (options.saveEvery > 0 && state.updates % options.saveEvery == 0))
      saveOrWarn(options.out, log, last);
    if (last) {
      run.stopped = true;
      break;
    }
  }
  if (bar)
    std::fprintf(stderr, "\n");
  run.seconds = secondsSince(start);
  return run;
}

Session::BatchTotals
Session::lossAndGradients(const std::vector<Example> &exs,
                          const std::vector<int64_t> &indices) {
  auto params = model->params();
  Team &team = Team::world();
  zeroGrads(params);
  BatchTotals totals;
  // Under mpirun this rank's shard of the batch; a short last batch may
  // leave a rank none.
  std::vector<int64_t> mine = team.shard(indices);
  if (!mine.empty()) {
    Batch batch = makeBatch(exs, mine);
    totals.loss = model->loss(batch, true, &state.dropoutRng);
    totals.targetTokens = batch.targetTokens;
    totals.sourceTokens = batch.sourceTokens;
    totals.sentences = batch.B;
  }
  // The model's gradient is that of the mean over the target tokens.
  std::vector<double> sums = {totals.loss, double(totals.targetTokens),
                              double(totals.sourceTokens),
                              double(totals.sentences)};
  team.combineBatch(params, sums);
  return {sums[0], int64_t(sums[1]), int64_t(sums[2]), int64_t(sums[3])};
}

Validation Session::validateOnLeader(const TrainData &data) {
  Team &team = Team::world();
  Validation v;
  if (team.leader()) {
    AttentionStats attention(0);
    validate(data.validSrc, data.validTgt, v.ppl, v.bleu, options.validBeam,
             &attention);
    if (attention.steps() > 0) {
      v.attentionOffDiagonal = attention.diagonalDistance();
      v.attentionEntropy = attention.normalizedEntropy();
    }
  }
  double results[4] = {v.ppl, v.bleu, v.attentionOffDiagonal,
                       v.attentionEntropy};
  team.broadcast(results, 4);
  return {results[0], results[1], results[2], results[3]};
}

/// ", attention off the diagonal D" for the log's lines, where the model
/// has an attention: a run whose attention stays far off it (0.5 where
/// 0.1 is usual) has not learnt to align, and its perplexity stalls.
static std::string attentionText(const Validation &v) {
  if (std::isnan(v.attentionOffDiagonal))
    return "";
  char text[64];
  std::snprintf(text, sizeof text, ", attention off the diagonal %.3f",
                v.attentionOffDiagonal);
  return text;
}

/// The validation's fields of a log event.
static void addAttention(models::EventFields &fields, const Validation &v) {
  if (std::isnan(v.attentionOffDiagonal))
    return;
  fields["valid_attention_off_diagonal"] = v.attentionOffDiagonal;
  fields["valid_attention_entropy"] = v.attentionEntropy;
}

void Session::validateNow(const TrainData &data, RunLog &runLog) {
  Validation v = validateOnLeader(data);
  double ppl = v.ppl, bleu = v.bleu;
  char line[256];
  std::snprintf(line, sizeof line,
                "epoch %lld update %lld: valid ppl %.3f, valid BLEU %.2f",
                (long long)state.epoch + 1, (long long)state.updates, ppl,
                bleu);
  runLog.text() << line << attentionText(v) << std::endl;
  models::EventFields fields = {{"epoch", state.epoch + 1},
                                {"update", state.updates},
                                {"valid_ppl", ppl},
                                {"valid_bleu", bleu}};
  addAttention(fields, v);
  runLog.event("validation", fields);
  // OUT.best is the best of every validation, not only the epochs' ends.
  if (bleu > state.bestBleu) {
    state.bestBleu = bleu;
    saveOrWarn(options.out + ".best", runLog.text(), false);
  }
}

bool madeProgress(const std::string &metric, bool bleuImproved,
                  const std::vector<double> &earlierPpl, double ppl) {
  // A non-finite perplexity (an epoch skipped with --skip-nonfinite) is no
  // best to beat.
  double best = INFINITY;
  for (double earlier : earlierPpl)
    if (std::isfinite(earlier))
      best = std::min(best, earlier);
  bool pplImproved = std::isfinite(ppl) && ppl < best;
  if (metric == "ppl")
    return pplImproved;
  if (metric == "either")
    return bleuImproved || pplImproved;
  return bleuImproved;
}

void Session::finishEpoch(const TrainData &data, RunLog &runLog,
                          const EpochRun &run) {
  std::ostream &log = runLog.text();
  Validation v = validateOnLeader(data);
  double ppl = v.ppl, bleu = v.bleu;
  bool improved = bleu > state.bestBleu;
  bool progressed = madeProgress(options.plateauMetric, improved,
                                 state.validPerplexity, ppl);
  state.epochLoss.push_back(
      state.epochTokens ? state.epochLossSum / double(state.epochTokens) : 0);
  state.validPerplexity.push_back(ppl);
  state.validBleu.push_back(bleu);
  char line[512];
  std::snprintf(line, sizeof line,
                "epoch %lld done: train loss %.4f, valid ppl %.3f, valid "
                "BLEU %.2f%s, %.0f words/s, %.1f s, lr %.3g",
                (long long)state.epoch + 1, state.epochLoss.back(), ppl, bleu,
                improved ? " (best)" : "",
                run.words / std::max(run.seconds, 1e-9), run.seconds, state.lr);
  // The epoch's summary also without the progress bar (--no-progress).
  runLog.summaries() << line << attentionText(v) << std::endl;
  models::EventFields fields = {
      {"epoch", state.epoch + 1},
      {"update", state.updates},
      {"train_loss", state.epochLoss.back()},
      {"valid_ppl", ppl},
      {"valid_bleu", bleu},
      {"words_per_s", run.words / std::max(run.seconds, 1e-9)},
      {"epoch_seconds", run.seconds},
      {"lr", state.lr},
      {"best", improved ? 1 : 0}};
  addAttention(fields, v);
  runLog.event("epoch", fields);
  if (improved)
    state.bestBleu = bleu;
  state.badEpochs = progressed ? 0 : state.badEpochs + 1;
  if (options.lrDecay == "epoch" ||
      (options.lrDecay == "plateau" && !progressed))
    state.lr *= 0.5;
  ++state.epoch;
  state.batchInEpoch = 0;
  state.epochLossSum = 0;
  state.epochTokens = 0;
  if (options.patience > 0 && state.badEpochs >= options.patience) {
    state.finished = true;
    log << "early stopping: no progress (" << options.plateauMetric
        << ") for " << state.badEpochs << " epochs" << std::endl;
  }
  if (state.epoch >= options.epochs)
    state.finished = true;
  if (improved)
    saveOrWarn(options.out + ".best", log, false);
  saveOrWarn(options.out, log, state.finished);
}

void Session::train(const TrainData &data) {
  std::vector<Example> exs = examples(data.trainSrc, data.trainTgt, true);
  if (exs.empty())
    throw DataError("no training sentence pair within --max-len " +
                    std::to_string(options.maxLen));
  Team &team = Team::world();
  std::unique_ptr<RunLog> runLogFile = models::openRunLog("nmt", *this);
  RunLog &runLog = *runLogFile;
  team.requireSame(model->parameterCount(), "the parameter count");
  team.requireSame(srcVocab.size() * 1000003 + tgtVocab.size(),
                   "the vocabularies");
  team.requireSame(int64_t(exs.size()), "the training pairs");
  team.requireSameProgress(state.updates, state.epoch, state.batchInEpoch);
  team.broadcastValues(model->params());
  team.separateStreams(state.dropoutRng);
  char line[512];
  std::snprintf(line, sizeof line,
                "%s, %lld parameters, vocab %lld/%lld, %zu training "
                "pairs (%zu dropped by --max-len)%s",
                architectureText(options.model).c_str(),
                (long long)model->parameterCount(),
                (long long)srcVocab.size(), (long long)tgtVocab.size(),
                exs.size(), data.trainSrc.size() - exs.size(),
                team.shared() ? (", " + std::to_string(team.size()) +
                                 " ranks (mpirun)")
                                    .c_str()
                              : "");
  runLog.summaries() << line << std::endl;
  while (!state.finished && state.epoch < options.epochs) {
    // A run resumed at its --max-updates has nothing left to do (one more
    // update, or an early end of epoch, would differ from the straight run).
    if (options.maxUpdates > 0 && state.updates >= options.maxUpdates)
      return;
    EpochRun run = runEpoch(exs, data, runLog);
    if (run.stopped)
      break;
    finishEpoch(data, runLog, run);
  }
  if (team.shared() && team.reductions() > 0) {
    std::snprintf(line, sizeof line,
                  "gradient reduction on rank 0: %.1f ms per update, %.1f s "
                  "in all",
                  1e3 * team.reductionSeconds() / double(team.reductions()),
                  team.reductionSeconds());
    runLog.summaries() << line << std::endl;
  }
}

} // namespace nmt
