//===- models/nmt/Analyze.h - Gates of a trained model ----------*- C++ -*-===//
//
// `nmt analyze`: the ATR paper's analyses (Figure 3, Eq. 10 and Figure 4;
// models/common/GateAnalysis.h) of a trained checkpoint on a source and
// target file. The model's cell is recompiled with probes on its gates
// (cellc --probe) and every layer records them while the reference (or the
// model's own translation) is force-decoded. Per side (the forward encoder,
// decoder cells 1 and 2): the mean of each gate over units and sentences by
// position, Pearson's r of the input and forget gates' means (per position,
// as the paper, and over all steps); for a cell of the additive form
// h' = i * p + f * h, the Eq. 10 weights and each word's strongest earlier
// word. Where the model has one attention over the source (RNNSearch, the
// context-aware and deep variants), where it looks too (AttentionStats.h):
// whether it learnt to align. Written as DIR/analysis.json and
// DIR/SIDE-gates.csv, and drawn by scripts/plot_gates.py where Python and
// matplotlib are installed.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_ANALYZE_H
#define CELLC_MODELS_NMT_ANALYZE_H

#include <cstdint>
#include <string>
#include <vector>

namespace nmt {

struct AnalyzeRequest {
  std::string model, src, ref, out;
  /// The probed gates; empty: the cell's usual ones (atr, ran, lstm: i, f;
  /// gru, lau: z, r; sru: f, r).
  std::vector<std::string> gates;
  /// The input and forget gates of an additive cell (Eq. 10); `1-z` is the
  /// complement of probe z. Empty: i, f for atr, ran and lstm (its c),
  /// z, 1-z for gru, none otherwise; "none": skip.
  std::vector<std::string> additive;
  int64_t batchSize = 32, sentences = 3, beam = 5;
  /// Force-decode the model's own translation instead of the reference.
  bool ownTranslation = false;
  /// Do not run scripts/plot_gates.py.
  bool noPlots = false;
};

/// Runs the analysis; throws DataError for bad files or gate names.
void analyze(const AnalyzeRequest &request);

} // namespace nmt

#endif
