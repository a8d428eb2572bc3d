//===- models/cws/Options.h - cws train's options ---------------*- C++ -*-===//
//
// Everything `cws train` can set, with the ATR paper's set-up (appendix
// A.2.3) as the defaults where the paper gives one. The checkpoint stores
// them as key=value text under these keys, which are also the option
// names (`--hidden`).
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_CWS_OPTIONS_H
#define CELLC_MODELS_CWS_OPTIONS_H

#include "models/common/OptionMap.h"
#include "models/cws/Model.h"

#include <set>
#include <string>

namespace cws {

struct TrainOptions {
  // Data: --valid "" holds out the last validFraction of --train; --dict
  // "" trains without word-list features.
  std::string train, valid, format = "auto", dict;
  double validFraction = 0.1;
  int64_t minCount = 2;
  float dictDropout = 0.1f;
  // Model.
  std::string cell = "atr", loss = "max-margin";
  /// The text of `cell` when it is a .cell file, kept in the checkpoint
  /// (models/common/Cells.h readCellSource).
  std::string cellSource;
  int64_t emb = 300, hidden = 300, layers = 1;
  /// What layer l + 1 reads of layer l: tanh of its states, or raw (before
  /// 2026-11-28, and what a checkpoint without the option was trained
  /// with); as nmt's --between-layers.
  std::string betweenLayers = "tanh";
  float dropout = 0.2f, margin = 0.2f, initScale = 0.08f;
  /// paper or fan_in (models/common/Init.h).
  std::string init = "paper";
  // Optimisation: the learning rate is lr * lrDecay^epoch.
  float lr = 5e-4f, lrDecay = 0.5f, clip = 1.0f;
  int64_t batch = 128, epochs = 5;
  uint64_t seed = 1;
  // Output.
  std::string out = "cws.ckpt", log;
  int64_t saveEvery = 0;
  bool progress = true;

  template <class Self, class Visit> static void fields(Self &o, Visit &&v) {
    v("train", o.train);
    v("valid", o.valid);
    v("format", o.format);
    v("dict", o.dict);
    v("valid-fraction", o.validFraction);
    v("min-count", o.minCount);
    v("dict-dropout", o.dictDropout);
    v("cell", o.cell);
    v("cell-source", o.cellSource);
    v("loss", o.loss);
    v("emb", o.emb);
    v("hidden", o.hidden);
    v("layers", o.layers);
    v("between-layers", o.betweenLayers);
    v("dropout", o.dropout);
    v("init", o.init);
    v("margin", o.margin);
    v("init-scale", o.initScale);
    v("lr", o.lr);
    v("lr-decay", o.lrDecay);
    v("clip", o.clip);
    v("batch", o.batch);
    v("epochs", o.epochs);
    v("seed", o.seed);
    v("out", o.out);
    v("log", o.log);
    v("save-every", o.saveEvery);
    v("progress", o.progress);
  }

  models::OptionMap toMap() const { return models::toOptionMap(*this); }
  static TrainOptions fromMap(const models::OptionMap &map) {
    TrainOptions options = models::fromOptionMap<TrainOptions>(map);
    if (!map.count("between-layers"))
      options.betweenLayers = "raw"; // as the checkpoint was trained
    return options;
  }
  /// The model these options describe over a vocabulary of `vocab` ids,
  /// with word-list features or without.
  ModelConfig modelConfig(int64_t vocab, bool lexicon) const;
  /// The log file: --log, or OUT.log.
  std::string logPath() const { return log.empty() ? out + ".log" : log; }
  /// The JSON-lines event log (models/common/RunLog.h): OUT.jsonl, or
  /// LOG.jsonl with --log.
  std::string eventLogPath() const {
    return (log.empty() ? out : log) + ".jsonl";
  }
};

/// The options `train --resume` may change; the others must stay the
/// checkpoint's.
const std::set<std::string> &optionsChangeableOnResume();
/// The options a resumed run always takes from its command line (where it
/// writes and reports).
const std::set<std::string> &optionsOfTheCommandLine();

} // namespace cws

#endif
