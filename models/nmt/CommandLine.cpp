//===- models/nmt/CommandLine.cpp - nmt's options -------------------------===//
//
// One CLI11 subcommand per command. Train options bind straight to the
// TrainOptions fields under their toMap() names, so `nmt train --resume`
// knows which ones the command line set.
//
//===----------------------------------------------------------------------===//

#include "models/nmt/CommandLine.h"

#include "models/common/Cells.h"
#include "models/common/CommandLine.h"

#include <cstdio>

namespace nmt {

namespace {

void addTaskOptions(CLI::App &cmd, TrainOptions &o) {
  const char *group = "Embedded task";
  option(cmd, "task-train", o.taskTrain, "training pairs")->group(group);
  option(cmd, "task-valid", o.taskValid, "validation pairs")->group(group);
  option(cmd, "task-test", o.taskTest, "test pairs")->group(group);
  option(cmd, "task-max", o.taskMax, "largest number")->group(group);
  option(cmd, "task-seed", o.taskSeed, "generator seed")->group(group);
}

void addDataOptions(CLI::App &cmd, TrainOptions &o) {
  const char *group = "Data";
  option(cmd, "task", o.task, "numbers (embedded) or files")
      ->check(CLI::IsMember({"numbers", "files"}))
      ->group(group);
  addTaskOptions(cmd, o);
  for (auto [name, field] : {std::pair{"train-src", &o.trainSrc},
                             {"train-tgt", &o.trainTgt},
                             {"valid-src", &o.validSrc},
                             {"valid-tgt", &o.validTgt},
                             {"spm-src", &o.spmSrc},
                             {"spm-tgt", &o.spmTgt}})
    option(cmd, name, *field, "file")->group(group);
  option(cmd, "tokenizer", o.tokenizer, "files: space or bpe")
      ->check(CLI::IsMember({"space", "bpe"}))
      ->group(group);
  option(cmd, "bpe-src", o.bpeSrc, "source BPE vocabulary")->group(group);
  option(cmd, "bpe-tgt", o.bpeTgt, "target BPE vocabulary")->group(group);
  option(cmd, "src-vocab", o.srcVocabMax, "max source vocab (0: all)")
      ->group(group);
  option(cmd, "tgt-vocab", o.tgtVocabMax, "max target vocab (0: all)")
      ->group(group);
  option(cmd, "min-count", o.minCount, "min token count")->group(group);
  option(cmd, "max-len", o.maxLen, "longest training sentence (tokens)")
      ->check(CLI::PositiveNumber)
      ->group(group);
}

void addModelOptions(CLI::App &cmd, TrainOptions &o) {
  const char *group = "Model";
  option(cmd, "cell", o.model.cell, cellOptionHelp())
      ->group(group);
  option(cmd, "cell2", o.model.cell2,
         "the cell of the layers with two sources (ca's forward encoder "
         "layer, gnmt's decoder layers 2..M): a two-input cell reads them "
         "apart (default: --cell over their concatenation)")
      ->group(group);
  option(cmd, "arch", o.model.arch,
         "rnnsearch (bidirectional encoder), ca (the ATR paper's "
         "context-aware encoder), gnmt (stacked: bidirectional then forward "
         "layers, residual from layer 3, the context fed to every decoder "
         "layer), deep (DeepLAU: encoder layers alternate direction), "
         "cseq2seq-1 (Cseq2seq-I: a cell re-reads the annotations at every "
         "target step instead of attention), cseq2seq-2 (Cseq2seq-II: the "
         "encoder itself re-reads the source) or srnmt (SR-NMT: stacks of "
         "weakly-recurrent units, an attention in every decoder unit)")
      ->check(CLI::IsMember(architectures()))
      ->group(group);
  option(cmd, "enc-layers", o.model.encLayers,
         "encoder layers (gnmt, deep, srnmt; 0: the architecture's, 2 for "
         "those, 1 for the others)")
      ->check(CLI::Range(0, 16))
      ->group(group);
  option(cmd, "dec-layers", o.model.decLayers,
         "decoder layers, gnmt's and deep's conditional pair counting as one "
         "(gnmt, deep, srnmt; 0: the architecture's, 2 for those, 1 for the "
         "others)")
      ->check(CLI::Range(0, 16))
      ->group(group);
  option(cmd, "context", o.model.context,
         "cseq2seq's context: the cell's last output or the mean of its "
         "outputs over the source")
      ->check(CLI::IsMember({"last", "mean"}))
      ->group(group);
  option(cmd, "between-layers", o.model.betweenLayers,
         "what a layer reads of the layer below (gnmt, deep, ca) and what "
         "cseq2seq's cyclic context passes on: tanh of the state, or raw "
         "(an ATR state is unbounded; raw: before 2026-11-28)")
      ->check(CLI::IsMember({"tanh", "raw"}))
      ->group(group);
  option(cmd, "deep-first", o.model.deepFirst,
         "deep: the first encoder layer's direction, forward (LAU's "
         "paper, Sec. 3.4) or backward (deep before 2026-11-28); the "
         "layers above alternate")
      ->check(CLI::IsMember({"forward", "backward"}))
      ->group(group);
  cmd.add_flag("--share-cell", o.model.shareCell,
               "cseq2seq-2's SGRU: decoder cell 1 shares the encoder cell")
      ->group(group);
  for (auto [flag, field, help] :
       {std::tuple{"--no-layernorm", &o.model.noLayerNorm,
                   "srnmt ablation: no layer norms (biases instead)"},
        {"--no-highway", &o.model.noHighway,
         "srnmt ablation: no highway connections"},
        {"--single-attention", &o.model.singleAttention,
         "srnmt ablation: only the top decoder unit attends"}})
    cmd.add_flag(flag, *field, help)->group(group);
  cmd.add_flag("--tie-output", o.model.tieOutput,
               "SWord: the output layer's weight is the target embedding "
               "table (needs --readout = --emb)")
      ->group(group);
  for (auto [name, field] : {std::pair{"emb", &o.model.emb},
                             {"hidden", &o.model.hidden},
                             {"att", &o.model.att},
                             {"readout", &o.model.readout}})
    option(cmd, name, *field, "width")
        ->check(models::layerWidth)
        ->group(group);
  option(cmd, "dropout", o.model.dropout, "dropout probability")
      ->check(models::dropoutRate)
      ->group(group);
  option(cmd, "init", o.init,
         "how a param without an initialiser in its cell file starts: paper "
         "(uniform +-init-scale, the ATR paper's) or fan_in (uniform "
         "+-1/sqrt(columns), PyTorch's default; narrower as layers widen)")
      ->check(CLI::IsMember({"paper", "fan_in"}))
      ->group(group);
  option(cmd, "init-scale", o.initScale, "uniform init range (--init paper)")
      ->group(group);
}

void addOptimizerOptions(CLI::App &cmd, TrainOptions &o) {
  const char *group = "Training";
  option(cmd, "lr", o.lr, "learning rate")
      ->check(models::learningRate)
      ->group(group);
  option(cmd, "clip", o.clip, "gradient norm clip (0: none)")
      ->check(models::clipNorm)
      ->group(group);
  option(cmd, "label-smoothing", o.labelSmoothing,
         "eps of the training loss (1 - eps) * -log p(target) + eps * mean "
         "over the target vocabulary of -log p (PyTorch's label_smoothing; "
         "padded steps excluded); validation perplexity stays unsmoothed")
      ->check(CLI::Range(0.0, 0.999))
      ->group(group);
  option(cmd, "precision", o.precision,
         "what every product reads: f32, or bf16 (weights and activations "
         "rounded to bfloat16, f32 sums, gate math and master weights; "
         "decoding a checkpoint uses its precision)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->group(group);
  option(cmd, "max-tokens", o.maxTokens, "target tokens per batch")
      ->check(CLI::PositiveNumber)
      ->group(group);
  option(cmd, "epochs", o.epochs, "epochs")
      ->check(models::positiveCount)
      ->group(group);
  option(cmd, "max-updates", o.maxUpdates, "stop after N updates (0: no)")
      ->group(group);
  option(cmd, "patience", o.patience, "early stopping (0: off)")->group(group);
  option(cmd, "lr-decay", o.lrDecay, "plateau, epoch or none")
      ->check(CLI::IsMember({"plateau", "epoch", "none"}))
      ->group(group);
  option(cmd, "plateau-metric", o.plateauMetric,
         "progress for the plateau decay and --patience: ppl (validation "
         "perplexity), bleu, or either (greedy BLEU is noise while it is "
         "near 0; OUT.best is the best BLEU of any validation)")
      ->check(CLI::IsMember({"bleu", "ppl", "either"}))
      ->group(group);
  option(cmd, "seed", o.seed, "random seed")->group(group);
}

void addOutputOptions(CLI::App &cmd, TrainOptions &o) {
  const char *group = "Output";
  option(cmd, "out", o.out, "checkpoint (OUT.best: best validation BLEU)")
      ->group(group);
  option(cmd, "log", o.log, "log file (default OUT.log)")->group(group);
  option(cmd, "save-every", o.saveEvery, "also save every N updates")
      ->group(group);
  option(cmd, "log-every", o.logEvery, "log every N updates")->group(group);
  option(cmd, "valid-beam", o.validBeam, "validation beam")
      ->check(CLI::PositiveNumber)
      ->group(group);
  option(cmd, "valid-every", o.validEvery,
         "also validate every N updates (logged; 0: after each epoch only)")
      ->group(group);
  option(cmd, "valid-max", o.validMax, "validation sentences (0: all)")
      ->group(group);
}

void addTrainCommand(CLI::App &app, TrainRequest &r) {
  CLI::App *cmd = app.add_subcommand("train", "Train a model (default: the "
                                              "embedded numbers task)");
  addDataOptions(*cmd, r.options);
  addModelOptions(*cmd, r.options);
  addOptimizerOptions(*cmd, r.options);
  addOutputOptions(*cmd, r.options);
  const char *group = "Resume";
  cmd->add_flag("--resume", r.resume, "continue OUT (or OUT.best)")
      ->group(group);
  cmd->add_option("--resume-from", r.resumeFrom,
                  "continue this checkpoint, writing OUT")
      ->group(group);
  cmd->add_flag("--force", r.force, "overwrite another run's checkpoint")
      ->group(group);
  cmd->add_flag("--skip-nonfinite", r.options.skipNonfinite,
                "skip an update with a NaN/Inf loss or gradient instead of "
                "stopping")
      ->group(group);
  cmd->add_flag_function(
      "--no-progress", [&r](int64_t count) { r.options.progress = count <= 0; },
      "no progress output on stderr");
}

void addTranslateCommand(CLI::App &app, TranslateRequest &r) {
  CLI::App *cmd = app.add_subcommand("translate", "Translate raw lines");
  cmd->add_option("--model", r.models,
                  "checkpoint; several (--model a b, or --model repeated): an "
                  "ensemble averaging their log-probabilities at every step "
                  "(same vocabularies)")
      ->required();
  option(*cmd, "input", r.input, "input (default: stdin)");
  option(*cmd, "output", r.output, "output (default: stdout)");
  option(*cmd, "beam", r.beam, "beam size")->check(CLI::Range(1, 1000));
  option(*cmd, "length-penalty", r.lengthPenalty, "score / length^P")
      ->check(CLI::Range(0.0, 10.0));
  option(*cmd, "batch-size", r.batchSize, "sentences per batch")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--tokenized", r.tokenized, "print tokenised output");
  option(*cmd, "n-best", r.nBest,
         "print each line's K best finished hypotheses, best first, as "
         "Moses n-best lines 'ID ||| TEXT ||| SCORE' (ID from 0; SCORE: "
         "log-probability / length^P); K <= --beam (0: one line per input)")
      ->check(CLI::Range(0, 1000));
}

void addAverageCommand(CLI::App &app, AverageRequest &r) {
  CLI::App *cmd = app.add_subcommand(
      "average", "Average the parameters of checkpoints of one model "
                 "(same architecture and vocabularies)");
  cmd->add_option("checkpoints", r.checkpoints, "checkpoints (two or more)")
      ->required()
      ->expected(2, 1000);
  cmd->add_option("--out", r.out,
                  "the averaged checkpoint (a new file: an "
                  "existing one is never replaced)")
      ->required();
}

void addScoreCommand(CLI::App &app, ScoreRequest &r) {
  CLI::App *cmd = app.add_subcommand(
      "score", "Corpus BLEU-4 or chrF2 with sacreBLEU's signature");
  cmd->add_option("--ref", r.ref, "reference lines")->required();
  cmd->add_option("--hyp", r.hyp, "hypothesis lines ('-': stdin)")->required();
  option(*cmd, "metric", r.metric,
         "bleu, or chrf (sacreBLEU's chrF2: character 1..6-grams without "
         "whitespace, beta 2)")
      ->check(CLI::IsMember({"bleu", "chrf"}));
  option(*cmd, "tokenize", r.tokenize,
         "BLEU's tokens: 13a (sacreBLEU, 'exp' smoothing) or none (the "
         "text's own, multi-bleu: no smoothing)")
      ->check(CLI::IsMember({"13a", "none"}));
  cmd->add_flag("--lc", r.lc, "lower-case before scoring");
}

void addTaskCommand(CLI::App &app, TaskRequest &r) {
  CLI::App *cmd = app.add_subcommand("task", "Print the embedded task");
  option(*cmd, "split", r.split, "train, valid or test")
      ->check(CLI::IsMember({"train", "valid", "test"}));
  option(*cmd, "side", r.side, "src, tgt or tgt-raw")
      ->check(CLI::IsMember({"src", "tgt", "tgt-raw"}));
  addTaskOptions(*cmd, r.options);
}

void addAnalyzeCommand(CLI::App &app, AnalyzeRequest &r) {
  CLI::App *cmd = app.add_subcommand(
      "analyze", "The ATR paper's gate analyses (Figures 3 and 4) of a "
                 "trained model: gate means by position, r, Eq. 10 arcs");
  cmd->add_option("--model", r.model, "checkpoint")->required();
  cmd->add_option("--src", r.src, "source lines")->required();
  cmd->add_option("--ref", r.ref, "target lines (force-decoded)")->required();
  cmd->add_option("--out", r.out, "folder for analysis.json, CSV and "
                                  "pictures")
      ->required();
  cmd->add_option("--gates", r.gates,
                  "probed gates (default: atr/ran/lstm i,f; gru/lau z,r; "
                  "sru f,r)")
      ->delimiter(',');
  cmd->add_option("--additive", r.additive,
                  "input and forget gate of a cell h' = i*p + f*h for Eq. 10; "
                  "1-z is z's complement (default i,f for atr, ran, lstm; "
                  "1-z,z for gru, whose z forgets; 'none' to skip)")
      ->delimiter(',');
  option(*cmd, "sentences", r.sentences, "sentences drawn as arcs")
      ->check(CLI::Range(0, 1000));
  option(*cmd, "batch-size", r.batchSize, "sentences per batch")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--own-translation", r.ownTranslation,
                "force-decode the model's own translation (beam --beam), "
                "not --ref");
  option(*cmd, "beam", r.beam, "beam of --own-translation")
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--no-plots", r.noPlots, "write JSON and CSV only");
}

} // namespace

std::optional<int> parseCommandLine(int argc, char **argv, CommandLine &cli) {
  CLI::App app("nmt: attention NMT over cellc-compiled cells", "nmt");
  app.set_version_flag("--version", "nmt (cellc) " CELLC_VERSION);
  addTrainCommand(app, cli.train);
  addTranslateCommand(app, cli.translate);
  addScoreCommand(app, cli.score);
  addAverageCommand(app, cli.average);
  addTaskCommand(app, cli.task);
  addAnalyzeCommand(app, cli.analyze);
  if (std::optional<int> exit = parseDriverCommands(
          app, argc, argv, cli.threads,
          "OpenMP threads for oneDNN (1 is fastest for small models)",
          cli.command))
    return exit;
  const TranslateRequest &t = cli.translate;
  if (cli.command == "translate" && t.nBest > t.beam) {
    std::fprintf(stderr,
                 "nmt: error: --n-best %lld: the beam keeps only --beam %lld "
                 "hypotheses\n",
                 (long long)t.nBest, (long long)t.beam);
    return 2;
  }
  if (cli.command == "train")
    cli.train.given =
        givenOptions(*app.get_subcommand("train"), TrainOptions().toMap());
  return std::nullopt;
}

} // namespace nmt
