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

//===--- Options ----------------------------------------------------------===//

std::map<std::string, std::string> TrainOptions::toMap() const {
  std::map<std::string, std::string> m;
  auto f = [](double x) {
    std::ostringstream s;
    s.precision(17);
    s << x;
    return s.str();
  };
  m["task"] = task;
  m["task-train"] = std::to_string(taskTrain);
  m["task-valid"] = std::to_string(taskValid);
  m["task-test"] = std::to_string(taskTest);
  m["task-max"] = std::to_string(taskMax);
  m["task-seed"] = std::to_string(taskSeed);
  m["train-src"] = trainSrc;
  m["train-tgt"] = trainTgt;
  m["valid-src"] = validSrc;
  m["valid-tgt"] = validTgt;
  m["tokenizer"] = tokenizer;
  m["bpe-src"] = std::to_string(bpeSrc);
  m["bpe-tgt"] = std::to_string(bpeTgt);
  m["spm-src"] = spmSrc;
  m["spm-tgt"] = spmTgt;
  m["src-vocab"] = std::to_string(srcVocabMax);
  m["tgt-vocab"] = std::to_string(tgtVocabMax);
  m["min-count"] = std::to_string(minCount);
  m["max-len"] = std::to_string(maxLen);
  m["cell"] = model.cell;
  m["arch"] = model.arch;
  m["enc-layers"] = std::to_string(model.encLayers);
  m["dec-layers"] = std::to_string(model.decLayers);
  m["context"] = model.context;
  m["share-cell"] = model.shareCell ? "1" : "0";
  m["tie-output"] = model.tieOutput ? "1" : "0";
  m["cell2"] = model.cell2;
  m["cell2-source"] = model.cell2Source;
  m["no-layernorm"] = model.noLayerNorm ? "1" : "0";
  m["no-highway"] = model.noHighway ? "1" : "0";
  m["single-attention"] = model.singleAttention ? "1" : "0";
  m["deep-first"] = model.deepFirst;
  m["between-layers"] = model.betweenLayers;
  m["cell-source"] = model.cellSource;
  m["emb"] = std::to_string(model.emb);
  m["hidden"] = std::to_string(model.hidden);
  m["att"] = std::to_string(model.att);
  m["readout"] = std::to_string(model.readout);
  m["dropout"] = f(model.dropout);
  m["init-scale"] = f(initScale);
  m["init"] = init;
  m["lr"] = f(lr);
  m["clip"] = f(clip);
  m["label-smoothing"] = f(labelSmoothing);
  m["precision"] = precision;
  m["max-tokens"] = std::to_string(maxTokens);
  m["epochs"] = std::to_string(epochs);
  m["max-updates"] = std::to_string(maxUpdates);
  m["patience"] = std::to_string(patience);
  m["lr-decay"] = lrDecay;
  m["plateau-metric"] = plateauMetric;
  m["seed"] = std::to_string(seed);
  m["out"] = out;
  m["log"] = log;
  m["save-every"] = std::to_string(saveEvery);
  m["log-every"] = std::to_string(logEvery);
  m["valid-beam"] = std::to_string(validBeam);
  m["valid-max"] = std::to_string(validMax);
  m["valid-every"] = std::to_string(validEvery);
  m["progress"] = progress ? "1" : "0";
  m["skip-nonfinite"] = skipNonfinite ? "1" : "0";
  return m;
}

TrainOptions
TrainOptions::fromMap(const std::map<std::string, std::string> &m) {
  TrainOptions o;
  auto get = [&](const char *key) -> const std::string * {
    auto it = m.find(key);
    return it == m.end() ? nullptr : &it->second;
  };
  auto number = [&](const char *key, auto &field) {
    const std::string *value = get(key);
    if (!value)
      return;
    try {
      size_t used = 0;
      double x = std::stod(*value, &used);
      if (used != value->size())
        throw std::invalid_argument("");
      field = static_cast<std::remove_reference_t<decltype(field)>>(x);
    } catch (const std::exception &) {
      throw DataError("--" + std::string(key) + ": not a number: '" + *value +
                      "'");
    }
  };
  auto text = [&](const char *key, std::string &field) {
    if (const std::string *value = get(key))
      field = *value;
  };
  text("task", o.task);
  number("task-train", o.taskTrain);
  number("task-valid", o.taskValid);
  number("task-test", o.taskTest);
  number("task-max", o.taskMax);
  number("task-seed", o.taskSeed);
  text("train-src", o.trainSrc);
  text("train-tgt", o.trainTgt);
  text("valid-src", o.validSrc);
  text("valid-tgt", o.validTgt);
  text("tokenizer", o.tokenizer);
  number("bpe-src", o.bpeSrc);
  number("bpe-tgt", o.bpeTgt);
  text("spm-src", o.spmSrc);
  text("spm-tgt", o.spmTgt);
  number("src-vocab", o.srcVocabMax);
  number("tgt-vocab", o.tgtVocabMax);
  number("min-count", o.minCount);
  number("max-len", o.maxLen);
  text("cell", o.model.cell);
  text("arch", o.model.arch);
  number("enc-layers", o.model.encLayers);
  number("dec-layers", o.model.decLayers);
  text("context", o.model.context);
  number("share-cell", o.model.shareCell);
  number("tie-output", o.model.tieOutput);
  text("cell2", o.model.cell2);
  text("cell2-source", o.model.cell2Source);
  number("no-layernorm", o.model.noLayerNorm);
  number("no-highway", o.model.noHighway);
  number("single-attention", o.model.singleAttention);
  // A checkpoint from before the option ran its first deep layer backward.
  o.model.deepFirst = "backward";
  text("deep-first", o.model.deepFirst);
  if (o.model.deepFirst != "forward" && o.model.deepFirst != "backward")
    throw DataError("--deep-first must be forward or backward");
  // A checkpoint from before the option passed raw states between layers.
  o.model.betweenLayers = "raw";
  text("between-layers", o.model.betweenLayers);
  if (o.model.betweenLayers != "tanh" && o.model.betweenLayers != "raw")
    throw DataError("--between-layers must be tanh or raw");
  text("cell-source", o.model.cellSource);
  number("emb", o.model.emb);
  number("hidden", o.model.hidden);
  number("att", o.model.att);
  number("readout", o.model.readout);
  number("dropout", o.model.dropout);
  number("init-scale", o.initScale);
  text("init", o.init);
  driverInitScheme(o.init, o.initScale); // checks the name
  number("lr", o.lr);
  number("clip", o.clip);
  // A checkpoint from before the option trained without smoothing.
  number("label-smoothing", o.labelSmoothing);
  if (!(o.labelSmoothing >= 0 && o.labelSmoothing < 1))
    throw DataError("--label-smoothing must be in [0, 1)");
  text("precision", o.precision);
  number("max-tokens", o.maxTokens);
  number("epochs", o.epochs);
  number("max-updates", o.maxUpdates);
  number("patience", o.patience);
  text("lr-decay", o.lrDecay);
  // A checkpoint from before the option was trained by BLEU.
  o.plateauMetric = "bleu";
  text("plateau-metric", o.plateauMetric);
  number("seed", o.seed);
  text("out", o.out);
  text("log", o.log);
  number("save-every", o.saveEvery);
  number("log-every", o.logEvery);
  number("valid-beam", o.validBeam);
  number("valid-max", o.validMax);
  number("valid-every", o.validEvery);
  if (const std::string *value = get("progress"))
    o.progress = *value != "0";
  if (const std::string *value = get("skip-nonfinite"))
    o.skipNonfinite = *value != "0";
  if (o.task != "numbers" && o.task != "files")
    throw DataError("--task must be numbers or files, not '" + o.task + "'");
  if (o.tokenizer != "space" && o.tokenizer != "bpe")
    throw DataError("--tokenizer must be space or bpe, not '" + o.tokenizer +
                    "'");
  if (o.lrDecay != "plateau" && o.lrDecay != "epoch" && o.lrDecay != "none")
    throw DataError("--lr-decay must be plateau, epoch or none");
  if (!cellrt::parsePrecision(o.precision))
    throw DataError("--precision must be f32 or bf16, not '" + o.precision +
                    "'");
  if (o.plateauMetric != "bleu" && o.plateauMetric != "ppl" &&
      o.plateauMetric != "either")
    throw DataError("--plateau-metric must be bleu, ppl or either");
  return o;
}

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
  setProductPrecision(cellrt::parsePrecision(options.precision)
                          .value_or(cellrt::Precision::F32));
  ModelConfig config = options.model;
  config.srcVocab = srcVocab.size();
  config.tgtVocab = tgtVocab.size();
  const cellrt::Cell *cell2 =
      config.cell2.empty() ? nullptr
                           : &loadCell(config.cell2, config.cell2Source);
  model = makeModel(config, loadCell(config.cell, config.cellSource), cell2);
  model->setLabelSmoothing(options.labelSmoothing);
  adam.clipNorm = options.clip;
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
                       const std::vector<std::string> &ref,
                       double &perplexity, double &bleu, int64_t beam) {
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
  for (size_t start = 0; start < order.size(); start += 64) {
    std::vector<int64_t> idx(order.begin() + start,
                             order.begin() + std::min(order.size(), start + 64));
    Batch batch = makeBatch(exs, idx);
    total += model->loss(batch, false, nullptr);
    tokens += batch.targetTokens;
  }
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
