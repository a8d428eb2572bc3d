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

#include "models/common/Cells.h"
#include "models/common/OptionTable.h"
#include "models/cws/Model.h"

#include <string>

namespace cws {

struct TrainOptions : models::TableOptions<TrainOptions> {
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
  /// Stop after this many epochs without a better validation F1 (0: never,
  /// the paper's fixed schedule); OUT.best keeps the best.
  int64_t patience = 0;
  uint64_t seed = 1;
  // Output.
  std::string out = "cws.ckpt", log;
  int64_t saveEvery = 0;
  bool progress = true;

  /// The option table (models/common/OptionTable.h): `cws train`'s
  /// options, the checkpoint's record of them and what --resume may change.
  template <class Self, class Visit> static void fields(Self &o, Visit &&v) {
    dataFields(o, v);
    modelFields(o, v);
    trainingFields(o, v);
    models::sharedRows(o, v, "checkpoint (OUT.best: best validation F1)");
  }

  /// The model these options describe over a vocabulary of `vocab` ids,
  /// with word-list features or without.
  ModelConfig modelConfig(int64_t vocab, bool lexicon) const;

private:
  template <class Self, class Visit> static void dataFields(Self &o, Visit &v);
  template <class Self, class Visit> static void modelFields(Self &o, Visit &v);
  template <class Self, class Visit>
  static void trainingFields(Self &o, Visit &v);
};

//===--- The option table -------------------------------------------------===//

namespace detail {
inline const char *const FormatHelp =
    "auto (CoNLL-U for .conll/.conllu, else segmented), segmented or conllu";
} // namespace detail

template <class Self, class Visit>
void TrainOptions::dataFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Data";
  v(Opt("train", "gold segmentation to learn from").group(group).path(),
    o.train);
  v(Opt("valid", "gold segmentation to validate on (default: the last "
                 "--valid-fraction of --train)")
        .group(group)
        .path(),
    o.valid);
  v(Opt("format", detail::FormatHelp)
        .group(group)
        .check(CLI::IsMember({"auto", "segmented", "conllu"})),
    o.format);
  v(Opt("dict", "word list (or corpus) whose words become per-character "
                "input features (default: none, the paper's model)")
        .group(group)
        .path(),
    o.dict);
  v(Opt("valid-fraction", "held out of --train without --valid")
        .group(group)
        .check(CLI::Range(0.0, 1.0)),
    o.validFraction);
  v(Opt("min-count", "rarer training characters are <unk>, as unseen ones")
        .group(group)
        .check(models::positiveCount),
    o.minCount);
  v(Opt("dict-dropout", "training hides each listed gold word from --dict "
                        "with this probability, as new text has unlisted "
                        "words")
        .group(group)
        .check(CLI::Range(0.0, 1.0)),
    o.dictDropout);
}

template <class Self, class Visit>
void TrainOptions::modelFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Model";
  v(Opt("cell", models::cellOptionHelp()).group(group), o.cell);
  v(Opt("cell-source", "the .cell file's text").recorded(), o.cellSource);
  v(Opt("loss", "max-margin (the paper's) or nll")
        .group(group)
        .check(CLI::IsMember({"max-margin", "nll"})),
    o.loss);
  v(Opt("emb", "character embedding width")
        .group(group)
        .check(models::layerWidth),
    o.emb);
  v(Opt("hidden", "state width of each direction")
        .group(group)
        .check(models::layerWidth),
    o.hidden);
  v(Opt("layers", "stacked bidirectional layers")
        .group(group)
        .check(CLI::Range(1, 8)),
    o.layers);
  v(Opt("between-layers",
        "what a layer reads of the layer below: tanh of its states, or raw "
        "(an ATR state is unbounded; raw: before 2026-11-28)")
        .group(group)
        .check(CLI::IsMember({"tanh", "raw"}))
        .absentMeans("raw"),
    o.betweenLayers);
  v(Opt("dropout", "on the embeddings and before the emission scores")
        .group(group)
        .check(models::dropoutRate),
    o.dropout);
  v(Opt("margin", "max-margin cost of each wrong tag")
        .group(group)
        .check(CLI::Range(0.0, 100.0)),
    o.margin);
}

template <class Self, class Visit>
void TrainOptions::trainingFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Training";
  v(Opt("lr-decay", "learning rate factor per epoch")
        .group(group)
        .check(CLI::Range(0.0, 1.0)),
    o.lrDecay);
  v(Opt("patience", "stop after N epochs without a better validation F1 "
                    "(0: never)")
        .group(group)
        .changeable(),
    o.patience);
  v(Opt("batch", "sentences per update")
        .group(group)
        .check(CLI::Range(1, 100000)),
    o.batch);
}

} // namespace cws

#endif
