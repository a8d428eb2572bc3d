//===- models/nmt/Trainer.cpp - Training, validation, translation --------===//

#include "models/nmt/Trainer.h"
#include "models/common/Init.h"

#include "models/common/Bleu.h"
#include "models/common/Cells.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

namespace nmt {

//===--- Codec ------------------------------------------------------------===//

std::vector<std::string> Codec::source(const std::string &line) const {
  if (mode == "numbers")
    return tokenizeEnglishNumber(line);
  if (mode == "bpe")
    return srcSpm.encode(line);
  return splitWhitespace(line);
}

std::vector<std::string> Codec::target(const std::string &line) const {
  if (mode == "bpe")
    return tgtSpm.encode(line);
  return splitWhitespace(line);
}

std::string Codec::tokenized(const std::vector<std::string> &tokens) const {
  if (mode == "bpe")
    return tgtSpm.decode(tokens);
  return joinTokens(tokens);
}

std::string Codec::detokenized(const std::vector<std::string> &tokens) const {
  if (mode == "numbers")
    return joinTokens(tokens, "");
  return tokenized(tokens);
}

//===--- Data -------------------------------------------------------------===//

TrainData loadTrainData(const TrainOptions &options) {
  TrainData data;
  if (options.task == "numbers") {
    NumbersTask task =
        makeNumbersTask(options.taskSeed, options.taskTrain, options.taskValid,
                        options.taskTest, options.taskMax);
    data.trainSrc = std::move(task.train.src);
    data.trainTgt = std::move(task.train.tgt);
    data.validSrc = std::move(task.valid.src);
    data.validTgt = std::move(task.valid.tgt);
    return data;
  }
  if (options.trainSrc.empty() || options.trainTgt.empty() ||
      options.validSrc.empty() || options.validTgt.empty())
    throw DataError("--task files needs --train-src, --train-tgt, "
                    "--valid-src and --valid-tgt");
  readParallel(options.trainSrc, options.trainTgt, data.trainSrc,
               data.trainTgt);
  readParallel(options.validSrc, options.validTgt, data.validSrc,
               data.validTgt);
  return data;
}

//===--- Session ----------------------------------------------------------===//

Session::Session(const TrainOptions &opts, const TrainData &data)
    : options(opts) {
  if (options.task == "numbers") {
    codec.mode = "numbers";
  } else if (options.tokenizer == "bpe") {
    codec.mode = "bpe";
    codec.srcSpm = options.spmSrc.empty()
                       ? Subword::train(data.trainSrc, options.bpeSrc)
                       : Subword::loadFile(options.spmSrc);
    codec.tgtSpm = options.spmTgt.empty()
                       ? Subword::train(data.trainTgt, options.bpeTgt)
                       : Subword::loadFile(options.spmTgt);
  } else {
    codec.mode = "space";
  }
  std::vector<std::vector<std::string>> src, tgt;
  for (const auto &line : data.trainSrc)
    src.push_back(codec.source(line));
  for (const auto &line : data.trainTgt)
    tgt.push_back(codec.target(line));
  srcVocab = Vocab::build(src, options.srcVocabMax, options.minCount);
  tgtVocab = Vocab::build(tgt, options.tgtVocabMax, options.minCount);
  build();
  model->initialize(options.seed,
                    driverInitScheme(options.init, options.initScale));
  state.lr = options.lr;
  state.dropoutRng.reseed(options.seed * 7919 + 17);
  runId = newRunId();
}

void Session::build() {
  // A .cell file's text is kept with the options in the checkpoint: the
  // model loads after the file moves or changes, and a resumed run goes on
  // with the cell it started with.
  if (options.model.cellSource.empty())
    options.model.cellSource = readCellSource(options.model.cell);
  options.model.resolveLayers();
  if (!options.model.cell2.empty() && options.model.cell2Source.empty())
    options.model.cell2Source = readCellSource(options.model.cell2);
  // Before the cells load: they take the precision (models/common/Cells.h).
  // The process's setting is what training reads; this thread's, what the
  // model is built in even while another thread builds one of another
  // precision (copies of an ensemble's sessions).
  const cellrt::Precision precision = cellrt::parsePrecision(options.precision)
                                          .value_or(cellrt::Precision::F32);
  setProductPrecision(precision);
  models::ThreadProductPrecision buildIn(precision);
  ModelConfig config = options.model;
  config.srcVocab = srcVocab.size();
  config.tgtVocab = tgtVocab.size();
  const cellrt::Cell *cell2 = config.cell2.empty()
                                  ? nullptr
                                  : &loadCell(config.cell2, config.cell2Source);
  model = makeModel(config, loadCell(config.cell, config.cellSource), cell2);
  model->setLabelSmoothing(options.labelSmoothing);
  adam.clipNorm = options.clip;
}

void Session::changePrecision(const std::string &precision) {
  std::vector<models::Param> kept;
  for (const models::Param *param : model->params())
    kept.push_back(*param);
  options.precision = precision;
  build();
  std::vector<models::Param *> params = model->params();
  for (size_t i = 0; i < params.size(); ++i) {
    params[i]->value = kept[i].value;
    params[i]->m = kept[i].m;
    params[i]->v = kept[i].v;
  }
}

std::vector<Example> Session::examples(const std::vector<std::string> &src,
                                       const std::vector<std::string> &tgt,
                                       bool filter) const {
  std::vector<Example> out;
  for (size_t i = 0; i < src.size(); ++i) {
    Example ex{srcVocab.encode(codec.source(src[i])),
               tgtVocab.encode(codec.target(tgt[i]))};
    if (filter && (ex.src.empty() || ex.tgt.empty() ||
                   int64_t(ex.src.size()) > options.maxLen ||
                   int64_t(ex.tgt.size()) > options.maxLen))
      continue;
    out.push_back(std::move(ex));
  }
  return out;
}

void Session::validate(const std::vector<std::string> &src,
                       const std::vector<std::string> &ref, double &perplexity,
                       double &bleu, int64_t beam, AttentionStats *attention) {
  std::vector<Example> exs = examples(src, ref, false);
  double total = 0;
  int64_t tokens = 0;
  std::vector<int64_t> order(exs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return exs[a].src.size() < exs[b].src.size();
  });
  // Perplexity is of the plain cross-entropy, whatever training smooths.
  const float smoothing = model->labelSmoothing();
  model->setLabelSmoothing(0);
  std::vector<float> alpha;
  bool recording = attention && model->recordAttention(&alpha);
  for (size_t start = 0; start < order.size(); start += 64) {
    std::vector<int64_t> idx(order.begin() + start,
                             order.begin() +
                                 std::min(order.size(), start + 64));
    Batch batch = makeBatch(exs, idx);
    total += model->loss(batch, false, nullptr);
    tokens += batch.targetTokens;
    if (recording)
      attention->add(alpha, batch.Ty, batch.Tx, batch.srcLen, batch.tgtLen);
  }
  if (recording)
    model->recordAttention(nullptr);
  model->setLabelSmoothing(smoothing);
  perplexity = std::exp(total / double(std::max<int64_t>(1, tokens)));
  size_t count = src.size();
  if (options.validMax > 0)
    count = std::min<size_t>(count, size_t(options.validMax));
  std::vector<std::string> lines(src.begin(), src.begin() + count),
      refs(ref.begin(), ref.begin() + count), hyps;
  translate(lines, beam, 1.0f, 64, &hyps);
  bleu = corpusMultiBleu(hyps, refs).bleu;
}

} // namespace nmt
