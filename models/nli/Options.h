//===- models/nli/Options.h - nli train's options ---------------*- C++ -*-===//
//
// Everything `nli train` can set, as one option table (models/common/
// OptionTable.h): the command line, the checkpoint's record of the options
// and what `train --resume` may change all read it.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NLI_OPTIONS_H
#define CELLC_MODELS_NLI_OPTIONS_H

#include "models/common/Cells.h"
#include "models/common/OptionTable.h"
#include "models/nli/Model.h"

#include <string>

namespace nli {

struct TrainOptions : models::TableOptions<TrainOptions> {
  std::string train, valid; // splits, e.g. DATA/snli/train_small
  std::string embeddings;   // GloVe/word2vec text file (optional)
  bool freezeEmbeddings = false, lowercase = true;
  int64_t vocabMax = 0, minCount = 1;
  /// The model; its vocab is the vocabulary's size and squashStates follows
  /// betweenLayers.
  ModelConfig model;
  /// What the attention reads of the encoders' states: tanh (ATR's state
  /// is unbounded) or raw (before 2026-11-28).
  std::string betweenLayers = "tanh";
  float lr = 5e-4f, clip = 5.0f, initScale = 0.1f;
  /// paper (uniform +-initScale) or fan_in (models/common/Init.h).
  std::string init = "paper";
  int64_t batch = 128, epochs = 10, maxUpdates = 0;
  /// Stop after this many epochs without a better validation accuracy
  /// (0: never); OUT.best keeps the best.
  int64_t patience = 3;
  uint64_t seed = 1;
  std::string out = "nli.ckpt", log;
  int64_t saveEvery = 0;
  bool progress = true;

  /// The option table.
  template <class Self, class Visit> static void fields(Self &o, Visit &&v) {
    dataFields(o, v);
    modelFields(o, v);
    trainingFields(o, v);
    models::sharedRows(o, v, "checkpoint (OUT.best: best validation accuracy)");
  }

private:
  template <class Self, class Visit> static void dataFields(Self &o, Visit &v);
  template <class Self, class Visit> static void modelFields(Self &o, Visit &v);
  template <class Self, class Visit>
  static void trainingFields(Self &o, Visit &v);
};

//===--- The option table -------------------------------------------------===//

template <class Self, class Visit>
void TrainOptions::dataFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Data";
  v(Opt("train", "training split (DIR/train: SNLI's DIR/{s1,s2,labels}.train "
                 "or SICK's DIR/train.tsv)")
        .group(group)
        .path()
        .required(),
    o.train);
  v(Opt("valid", "validation split").group(group).path().required(), o.valid);
  v(Opt("embeddings", "pretrained vectors (GloVe or word2vec text)")
        .group(group)
        .path(),
    o.embeddings);
  v(Opt("freeze-embeddings", "keep the embedding table fixed")
        .group(group)
        .flag(),
    o.freezeEmbeddings);
  v(Opt("lowercase", "lower-case the text").recorded(), o.lowercase);
  v(Opt("vocab-max", "largest vocabulary (0: all)").group(group), o.vocabMax);
  v(Opt("min-count", "drop rarer words").group(group), o.minCount);
}

template <class Self, class Visit>
void TrainOptions::modelFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Model";
  v(Opt("model", "attention (word-by-word) or bow")
        .group(group)
        .check(CLI::IsMember({"attention", "bow"})),
    o.model.kind);
  v(Opt("cell", models::cellOptionHelp()).group(group), o.model.cell);
  v(Opt("cell-source", "the .cell file's text").recorded(), o.model.cellSource);
  v(Opt("emb", "embedding width").group(group).check(models::layerWidth),
    o.model.emb);
  v(Opt("hidden", "state width (bow: MLP width)")
        .group(group)
        .check(models::layerWidth),
    o.model.hidden);
  v(Opt("between-layers",
        "what the attention reads of the encoders' states: tanh or raw (an "
        "ATR state is unbounded; raw: before 2026-11-28)")
        .group(group)
        .check(CLI::IsMember({"tanh", "raw"}))
        .absentMeans("raw"),
    o.betweenLayers);
  v(Opt("dropout", "on embeddings and before the classifier")
        .group(group)
        .check(models::dropoutRate),
    o.model.dropout);
}

template <class Self, class Visit>
void TrainOptions::trainingFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Training";
  v(Opt("batch", "pairs per update").group(group).check(models::positiveCount),
    o.batch);
  v(Opt("max-updates", "stop after N updates (0: no)")
        .group(group)
        .changeable(),
    o.maxUpdates);
  v(Opt("patience", "stop after N epochs without a better validation "
                    "accuracy (0: never)")
        .group(group)
        .changeable(),
    o.patience);
}

} // namespace nli

#endif
