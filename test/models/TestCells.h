//===- TestCells.h - Cells the model tests compile from source -*- C++ -*-===//

#ifndef CELLC_TEST_MODELS_TESTCELLS_H
#define CELLC_TEST_MODELS_TESTCELLS_H

namespace modeltest {

/// A GRU-like cell with a second input (test/tools/Inputs/two-input-gru.cell)
/// for nmt's --cell2: 2 (H I + H C + H H + H) parameters.
inline const char *const kTwoInputGru = R"(
cell gru2(x: [I], c: [C]) {
  state h: [H]
  param Wz: [H, I], Vz: [H, C], Uz: [H, H], bz: [H]
  param Wn: [H, I], Vn: [H, C], Un: [H, H], bn: [H]
  z = sigmoid(Wz @ x + Vz @ c + Uz @ h + bz)
  n = tanh(Wn @ x + Vn @ c + Un @ h + bn)
  h' = z * h + (1 - z) * n
})";

/// cells/lstm.cell with its forget bias declared 1 (Jozefowicz et al.
/// 2015; cells/lstm.cell itself declared it until 2026-11-30): every driver
/// must start each layer's bf so, whatever --init says.
inline const char *const kLstmForgetBiasOne =
    CELLC_SOURCE_DIR "/test/models/Inputs/lstm-forget-bias-1.cell";

} // namespace modeltest

#endif
