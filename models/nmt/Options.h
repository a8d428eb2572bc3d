//===- models/nmt/Options.h - nmt train's options ---------------*- C++ -*-===//
//
// Everything `nmt train` can set, as one option table (models/common/
// OptionTable.h): the command line, the checkpoint's record of the options
// and what `train --resume` may change all read it.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_OPTIONS_H
#define CELLC_MODELS_NMT_OPTIONS_H

#include "models/common/Cells.h"
#include "models/common/OptionTable.h"
#include "models/nmt/SourceEncoder.h"
#include "models/nmt/TranslationModel.h"

#include <string>

namespace nmt {

struct TrainOptions : models::TableOptions<TrainOptions> {
  // Data: the embedded numbers task, or parallel files.
  std::string task = "numbers"; // numbers | files
  int64_t taskTrain = 20000, taskValid = 500, taskTest = 500;
  int64_t taskMax = 999999;
  uint64_t taskSeed = 1;
  std::string trainSrc, trainTgt, validSrc, validTgt;
  std::string tokenizer = "space"; // files: space | bpe
  int64_t bpeSrc = 8000, bpeTgt = 8000;
  std::string spmSrc, spmTgt; // existing .model files instead of training
  int64_t srcVocabMax = 0, tgtVocabMax = 0, minCount = 1, maxLen = 80;
  // Model.
  ModelConfig model;
  float initScale = 0.08f;
  /// How a param without an initialiser of its own starts: paper or fan_in
  /// (models/common/Init.h).
  std::string init = "paper";
  // Optimisation.
  float lr = 5e-4f, clip = 5.0f;
  /// eps of the training loss's label smoothing (TranslationModel::loss);
  /// validation perplexity is always of the plain cross-entropy.
  float labelSmoothing = 0;
  /// What the products read: f32, or bf16 (rounded operands, f32 sums and
  /// master weights), the cells' and the layers' alike.
  std::string precision = "f32";
  int64_t maxTokens = 2000, epochs = 10, maxUpdates = 0, patience = 3;
  std::string lrDecay = "plateau"; // plateau | epoch | none
  /// What counts as progress for the plateau decay and --patience: ppl,
  /// bleu, or either (an epoch that improves BLEU or perplexity). Greedy
  /// validation BLEU is noise while it is near 0, so by BLEU a narrow model
  /// halved its rate three times in 4 epochs: perplexity is the default.
  /// OUT.best is always the best BLEU of any validation.
  std::string plateauMetric = "ppl";
  uint64_t seed = 1;
  // Output.
  std::string out = "nmt.ckpt";
  std::string log; // default: out + ".log"
  int64_t saveEvery = 0, logEvery = 100, validBeam = 1, validMax = 0;
  /// Validate (and log it) every N updates too; 0: only after each epoch.
  int64_t validEvery = 0;
  bool progress = true;
  // A non-finite loss or gradient skips the update instead of stopping.
  bool skipNonfinite = false;

  /// The option table.
  template <class Self, class Visit> static void fields(Self &o, Visit &&v) {
    taskFields(o, v);
    dataFields(o, v);
    modelFields(o, v);
    trainingFields(o, v);
    outputFields(o, v);
    models::sharedRows(o, v, "checkpoint (OUT.best: best validation BLEU)");
  }
  /// The group of the embedded task's options, which `nmt task` takes too.
  static constexpr const char *TaskGroup = "Embedded task";

private:
  template <class Self, class Visit> static void taskFields(Self &o, Visit &v);
  template <class Self, class Visit> static void dataFields(Self &o, Visit &v);
  template <class Self, class Visit> static void modelFields(Self &o, Visit &v);
  template <class Self, class Visit>
  static void modelWidthFields(Self &o, Visit &v);
  template <class Self, class Visit>
  static void trainingFields(Self &o, Visit &v);
  template <class Self, class Visit>
  static void outputFields(Self &o, Visit &v);
};

//===--- The option table -------------------------------------------------===//

template <class Self, class Visit>
void TrainOptions::taskFields(Self &o, Visit &v) {
  using models::Opt;
  v(Opt("task", "numbers (embedded) or files")
        .group("Data")
        .check(CLI::IsMember({"numbers", "files"})),
    o.task);
  v(Opt("task-train", "training pairs").group(TaskGroup), o.taskTrain);
  v(Opt("task-valid", "validation pairs").group(TaskGroup), o.taskValid);
  v(Opt("task-test", "test pairs").group(TaskGroup), o.taskTest);
  v(Opt("task-max", "largest number").group(TaskGroup), o.taskMax);
  v(Opt("task-seed", "generator seed").group(TaskGroup), o.taskSeed);
}

template <class Self, class Visit>
void TrainOptions::dataFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Data";
  v(Opt("train-src", "file").group(group).path(), o.trainSrc);
  v(Opt("train-tgt", "file").group(group).path(), o.trainTgt);
  v(Opt("valid-src", "file").group(group).path(), o.validSrc);
  v(Opt("valid-tgt", "file").group(group).path(), o.validTgt);
  v(Opt("spm-src", "file").group(group).path(), o.spmSrc);
  v(Opt("spm-tgt", "file").group(group).path(), o.spmTgt);
  v(Opt("tokenizer", "files: space or bpe")
        .group(group)
        .check(CLI::IsMember({"space", "bpe"})),
    o.tokenizer);
  v(Opt("bpe-src", "source BPE vocabulary").group(group), o.bpeSrc);
  v(Opt("bpe-tgt", "target BPE vocabulary").group(group), o.bpeTgt);
  v(Opt("src-vocab", "max source vocab (0: all)").group(group), o.srcVocabMax);
  v(Opt("tgt-vocab", "max target vocab (0: all)").group(group), o.tgtVocabMax);
  v(Opt("min-count", "min token count").group(group), o.minCount);
  v(Opt("max-len", "longest training sentence (tokens)")
        .group(group)
        .check(models::positiveCount),
    o.maxLen);
}

template <class Self, class Visit>
void TrainOptions::modelFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Model";
  auto &m = o.model;
  v(Opt("cell", models::cellOptionHelp()).group(group), m.cell);
  v(Opt("cell-source", "the .cell file's text").recorded(), m.cellSource);
  v(Opt("cell2", "the cell of the layers with two sources (ca's forward "
                 "encoder layer, gnmt's decoder layers 2..M): a two-input "
                 "cell reads them apart (default: --cell over their "
                 "concatenation)")
        .group(group),
    m.cell2);
  v(Opt("cell2-source", "the --cell2 file's text").recorded(), m.cell2Source);
  v(Opt("arch",
        "rnnsearch (bidirectional encoder), ca (the ATR paper's "
        "context-aware encoder), gnmt (stacked: bidirectional then forward "
        "layers, residual from layer 3, the context fed to every decoder "
        "layer), deep (DeepLAU: encoder layers alternate direction), "
        "cseq2seq-1 (Cseq2seq-I: a cell re-reads the annotations at every "
        "target step instead of attention), cseq2seq-2 (Cseq2seq-II: the "
        "encoder itself re-reads the source) or srnmt (SR-NMT: stacks of "
        "weakly-recurrent units, an attention in every decoder unit)")
        .group(group)
        .check(CLI::IsMember(architectures())),
    m.arch);
  v(Opt("enc-layers", "encoder layers (gnmt, deep, srnmt; 0: the "
                      "architecture's, 2 for those, 1 for the others)")
        .group(group)
        .check(CLI::Range(0, 16)),
    m.encLayers);
  v(Opt("dec-layers",
        "decoder layers, gnmt's and deep's conditional pair counting as one "
        "(gnmt, deep, srnmt; 0: the architecture's, 2 for those, 1 for the "
        "others)")
        .group(group)
        .check(CLI::Range(0, 16)),
    m.decLayers);
  v(Opt("context", "cseq2seq's context: the cell's last output or the mean "
                   "of its outputs over the source")
        .group(group)
        .check(CLI::IsMember({"last", "mean"})),
    m.context);
  v(Opt("between-layers",
        "what a layer reads of the layer below (gnmt, deep, ca) and what "
        "cseq2seq's cyclic context passes on: tanh of the state, or raw (an "
        "ATR state is unbounded; raw: before 2026-11-28)")
        .group(group)
        .check(CLI::IsMember({"tanh", "raw"}))
        .absentMeans("raw"),
    m.betweenLayers);
  v(Opt("deep-first", "deep: the first encoder layer's direction, forward "
                      "(LAU's paper, Sec. 3.4) or backward (deep before "
                      "2026-11-28); the layers above alternate")
        .group(group)
        .check(CLI::IsMember({"forward", "backward"}))
        .absentMeans("backward"),
    m.deepFirst);
  v(Opt("share-cell", "cseq2seq-2's SGRU: decoder cell 1 shares the encoder "
                      "cell")
        .group(group)
        .flag(),
    m.shareCell);
  v(Opt("no-layernorm", "srnmt ablation: no layer norms (biases instead)")
        .group(group)
        .flag(),
    m.noLayerNorm);
  v(Opt("no-highway", "srnmt ablation: no highway connections")
        .group(group)
        .flag(),
    m.noHighway);
  v(Opt("single-attention", "srnmt ablation: only the top decoder unit "
                            "attends")
        .group(group)
        .flag(),
    m.singleAttention);
  v(Opt("tie-output", "SWord: the output layer's weight is the target "
                      "embedding table (needs --readout = --emb)")
        .group(group)
        .flag(),
    m.tieOutput);
  modelWidthFields(o, v);
}

template <class Self, class Visit>
void TrainOptions::modelWidthFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Model";
  auto &m = o.model;
  v(Opt("emb", "width").group(group).check(models::layerWidth), m.emb);
  v(Opt("hidden", "width").group(group).check(models::layerWidth), m.hidden);
  v(Opt("att", "width").group(group).check(models::layerWidth), m.att);
  v(Opt("readout", "width").group(group).check(models::layerWidth), m.readout);
  v(Opt("dropout", "dropout probability")
        .group(group)
        .check(models::dropoutRate),
    m.dropout);
}

template <class Self, class Visit>
void TrainOptions::trainingFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Training";
  v(Opt("label-smoothing",
        "eps of the training loss (1 - eps) * -log p(target) + eps * mean "
        "over the target vocabulary of -log p (PyTorch's label_smoothing; "
        "padded steps excluded); validation perplexity stays unsmoothed")
        .group(group)
        .check(CLI::Range(0.0, 0.999)),
    o.labelSmoothing);
  v(Opt("precision",
        "what every product reads: f32, or bf16 (weights and activations "
        "rounded to bfloat16, f32 sums, gate math and master weights; "
        "decoding a checkpoint uses its precision)")
        .group(group)
        .check(CLI::IsMember({"f32", "bf16"})),
    o.precision);
  v(Opt("max-tokens", "target tokens per batch")
        .group(group)
        .check(models::positiveCount),
    o.maxTokens);
  v(Opt("max-updates", "stop after N updates (0: no)")
        .group(group)
        .changeable(),
    o.maxUpdates);
  v(Opt("patience", "stop after N validations without progress (0: never)")
        .group(group)
        .changeable(),
    o.patience);
  v(Opt("lr-decay", "plateau, epoch or none")
        .group(group)
        .check(CLI::IsMember({"plateau", "epoch", "none"})),
    o.lrDecay);
  v(Opt("plateau-metric",
        "progress for the plateau decay and --patience: ppl (validation "
        "perplexity), bleu, or either (greedy BLEU is noise while it is "
        "near 0; OUT.best is the best BLEU of any validation)")
        .group(group)
        .check(CLI::IsMember({"bleu", "ppl", "either"}))
        .absentMeans("bleu"),
    o.plateauMetric);
}

template <class Self, class Visit>
void TrainOptions::outputFields(Self &o, Visit &v) {
  using models::Opt;
  const char *group = "Output";
  v(Opt("log-every", "log every N updates").group(group).changeable(),
    o.logEvery);
  v(Opt("valid-beam", "validation beam")
        .group(group)
        .check(models::positiveCount)
        .changeable(),
    o.validBeam);
  v(Opt("valid-every",
        "also validate every N updates (logged; 0: after each epoch only)")
        .group(group)
        .changeable(),
    o.validEvery);
  v(Opt("valid-max", "validation sentences (0: all)").group(group).changeable(),
    o.validMax);
  v(Opt("skip-nonfinite", "skip an update with a NaN/Inf loss or gradient "
                          "instead of stopping")
        .group("Resume")
        .flag()
        .fromCommandLine(),
    o.skipNonfinite);
}

} // namespace nmt

#endif
