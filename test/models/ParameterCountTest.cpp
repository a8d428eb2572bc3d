//===- ParameterCountTest.cpp - RNNSearch's size against its formula ------===//
//
// The parameter count nmt prints is checked against the model's formula
// (ATR paper appendix A.1) with each cell's own count written out by hand
// (the ATR paper's Table 1: ATR 2 weight matrices, GRU 6, LSTM 8, RAN 4):
// a change in the model's wiring or in a cell shows up here.
//
//===----------------------------------------------------------------------===//

#include "models/common/Cells.h"
#include "models/nmt/Model.h"

#include "test/models/TestCells.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

using namespace nmt;

namespace {

/// Parameters of one cell layer reading I-wide inputs into an H-wide state;
/// cells whose input must be H wide (SRU, SR-NMT) get an H x I projection
/// when I != H.
int64_t cellParams(const std::string &cell, int64_t I, int64_t H) {
  int64_t projection = I == H ? 0 : H * I;
  static const std::map<std::string,
                        std::function<int64_t(int64_t, int64_t)>>
      formulas = {
          {"atr", [](int64_t I, int64_t H) { return H * I + H * H; }},
          {"gru", [](int64_t I, int64_t H) { return 3 * (H * I + H * H + H); }},
          // nn.GRU's form keeps b_hn apart from b_in: one bias more.
          {"torch_gru",
           [](int64_t I, int64_t H) { return 3 * (H * I + H * H) + 4 * H; }},
          {"lstm",
           [](int64_t I, int64_t H) { return 4 * (H * I + H * H + H); }},
          {"ran", [](int64_t I, int64_t H) { return 3 * H * I + 2 * H * H + 2 * H; }},
          {"lau", [](int64_t I, int64_t H) { return 5 * H * I + 4 * H * H; }},
          {"rnn", [](int64_t I, int64_t H) { return H * I + H * H + H; }},
          {"deeptrans",
           [](int64_t I, int64_t H) { return 3 * H * I + 9 * H * H; }},
      };
  if (cell == "sru")
    return projection + 3 * H * H + 2 * H;
  if (cell == "srnmt")
    return projection + 3 * H * H;
  return formulas.at(cell)(I, H);
}

/// A small model whose every width differs, so each term is told apart.
ModelConfig smallConfig(const std::string &cell, const std::string &arch) {
  ModelConfig config;
  config.cell = cell;
  config.arch = arch;
  config.srcVocab = 11;
  config.tgtVocab = 13;
  config.emb = 5;
  config.hidden = 7;
  config.att = 6;
  config.readout = 4;
  return config;
}

class ParameterCount : public testing::TestWithParam<std::string> {};

TEST_P(ParameterCount, IsTheModelsFormula) {
  ModelConfig config = smallConfig(GetParam(), "rnnsearch");
  Model model(config, models::loadCell(config.cell));
  const int64_t Vs = 11, Vt = 13, E = 5, H = 7, A = 6, R = 4, C = 2 * H;
  int64_t expected = (Vs + Vt) * E                      // embeddings
                     + 2 * cellParams(config.cell, E, H) // encoder, both ways
                     + cellParams(config.cell, E, H)     // decoder cell 1
                     + cellParams(config.cell, C, H)     // decoder cell 2
                     + H * C + H                         // init: tanh(W mean + b)
                     + A * H + A * C + A + A             // attention Wa, Ua, b, v
                     + R * H + R * E + R * C + R         // readout Ws, Wy, Wc, b
                     + Vt * R + Vt;                      // output
  EXPECT_EQ(model.parameterCount(), expected);
}

INSTANTIATE_TEST_SUITE_P(Cells, ParameterCount,
                         testing::Values("atr", "gru", "lstm", "ran", "lau",
                                         "rnn", "deeptrans", "sru", "srnmt"));

// The context-aware encoder (--arch ca): a backward layer over the
// embeddings, a forward one over [x ; backward state]; H-wide annotations.
TEST_P(ParameterCount, ContextAwareIsItsFormula) {
  ModelConfig config = smallConfig(GetParam(), "ca");
  Model model(config, models::loadCell(config.cell));
  const int64_t Vs = 11, Vt = 13, E = 5, H = 7, A = 6, R = 4, C = H;
  int64_t expected = (Vs + Vt) * E + cellParams(config.cell, E, H) +
                     cellParams(config.cell, E + H, H) +
                     cellParams(config.cell, E, H) +
                     cellParams(config.cell, C, H) + H * C + H +
                     A * H + A * C + A + A + R * H + R * E + R * C + R +
                     Vt * R + Vt;
  EXPECT_EQ(model.parameterCount(), expected);
}

// GNMT (--arch gnmt): a bidirectional layer, forward layers above it;
// decoder layers 2.. read [s ; c]; annotations H wide from two layers on.
TEST_P(ParameterCount, GnmtIsItsFormula) {
  for (int64_t layers : {1, 2, 4}) {
    ModelConfig config = smallConfig(GetParam(), "gnmt");
    config.encLayers = config.decLayers = layers;
    Model model(config, models::loadCell(config.cell));
    const int64_t Vs = 11, Vt = 13, E = 5, H = 7, A = 6, R = 4;
    const int64_t C = layers == 1 ? 2 * H : H;
    int64_t expected = (Vs + Vt) * E + 2 * cellParams(config.cell, E, H);
    if (layers > 1)
      expected += cellParams(config.cell, 2 * H, H) +
                  (layers - 2) * cellParams(config.cell, H, H);
    expected += cellParams(config.cell, E, H) + cellParams(config.cell, C, H) +
                (layers - 1) * cellParams(config.cell, H + C, H) + H * C + H +
                A * H + A * C + A + A + R * H + R * E + R * C + R + Vt * R +
                Vt;
    EXPECT_EQ(model.parameterCount(), expected) << layers << " layers";
  }
}

// DeepLAU (--arch deep): one-direction layers of H; decoder layers 2.. read
// the layer below only.
TEST_P(ParameterCount, DeepIsItsFormula) {
  for (int64_t layers : {2, 4}) {
    ModelConfig config = smallConfig(GetParam(), "deep");
    config.encLayers = config.decLayers = layers;
    Model model(config, models::loadCell(config.cell));
    const int64_t Vs = 11, Vt = 13, E = 5, H = 7, A = 6, R = 4, C = H;
    int64_t expected = (Vs + Vt) * E + cellParams(config.cell, E, H) +
                       (layers - 1) * cellParams(config.cell, H, H) +
                       cellParams(config.cell, E, H) +
                       cellParams(config.cell, C, H) +
                       (layers - 1) * cellParams(config.cell, H, H) + H * C +
                       H + A * H + A * C + A + A + R * H + R * E + R * C + R +
                       Vt * R + Vt;
    EXPECT_EQ(model.parameterCount(), expected) << layers << " layers";
  }
}

// Cseq2seq-I (--arch cseq2seq-1): no attention; a cell over the 2H-wide
// annotations started from tanh(V s~ + b0); the context is H wide.
TEST_P(ParameterCount, CyclicIsItsFormula) {
  ModelConfig config = smallConfig(GetParam(), "cseq2seq-1");
  Model model(config, models::loadCell(config.cell));
  const int64_t Vs = 11, Vt = 13, E = 5, H = 7, R = 4, C = 2 * H;
  int64_t expected = (Vs + Vt) * E + 2 * cellParams(config.cell, E, H) +
                     cellParams(config.cell, E, H) +    // decoder cell 1
                     cellParams(config.cell, H, H) +    // cell 2 reads c_j
                     H * C + H +                        // init
                     H * H + H + cellParams(config.cell, C, H) + // cyclic
                     R * H + R * E + R * H + R + Vt * R + Vt;
  EXPECT_EQ(model.parameterCount(), expected);
}

// Cseq2seq-II (--arch cseq2seq-2): one encoder cell (run backward for s_0
// and forward in the context), SGRU sharing it with decoder cell 1, SWord
// tying the output weight to the target embeddings.
TEST_P(ParameterCount, Cseq2seq2IsItsFormula) {
  for (bool share : {false, true})
    for (bool tie : {false, true}) {
      ModelConfig config = smallConfig(GetParam(), "cseq2seq-2");
      config.shareCell = share;
      config.tieOutput = tie;
      config.readout = config.emb;
      Model model(config, models::loadCell(config.cell));
      const int64_t Vs = 11, Vt = 13, E = 5, H = 7, R = E;
      int64_t expected = (Vs + Vt) * E + cellParams(config.cell, E, H) +
                         (share ? 0 : cellParams(config.cell, E, H)) +
                         cellParams(config.cell, H, H) + // cell 2 reads c_j
                         H * H + H +                     // init from <-h_0
                         H * H + H +                     // cyclic V
                         R * H + R * E + R * H + R + (tie ? 0 : Vt * R) + Vt;
      EXPECT_EQ(model.parameterCount(), expected)
          << "share " << share << ", tie " << tie;
    }
}


// --cell2: a two-input cell in the layers with two sources, reading them
// with weights of their own (2 (H I + H C + H H + H)).
TEST(ParameterCount, TwoSourceCellIsItsFormula) {
  const cellrt::Cell &gru2 = models::loadCell("gru2.cell", modeltest::kTwoInputGru);
  const int64_t Vs = 11, Vt = 13, E = 5, H = 7, A = 6, R = 4;
  auto two = [&](int64_t I, int64_t C) {
    return 2 * (H * I + H * C + H * H + H);
  };
  ModelConfig config = smallConfig("gru", "ca");
  Model ca(config, models::loadCell("gru"), &gru2);
  int64_t C = H;
  int64_t common = (Vs + Vt) * E + cellParams("gru", E, H) * 2 +
                   cellParams("gru", C, H) + H * C + H + A * H + A * C + A +
                   A + R * H + R * E + R * C + R + Vt * R + Vt;
  EXPECT_EQ(ca.parameterCount(),
            common + two(E, H)); // the forward layer reads x, <-h apart
  config = smallConfig("gru", "gnmt");
  config.encLayers = config.decLayers = 3;
  Model gnmt(config, models::loadCell("gru"), &gru2);
  int64_t encoder = 2 * cellParams("gru", E, H) +
                    cellParams("gru", 2 * H, H) + cellParams("gru", H, H);
  EXPECT_EQ(gnmt.parameterCount(),
            (Vs + Vt) * E + encoder + cellParams("gru", E, H) +
                cellParams("gru", C, H) + 2 * two(H, C) + H * C + H + A * H +
                A * C + A + A + R * H + R * E + R * C + R + Vt * R + Vt);
  config = smallConfig("gru", "rnnsearch");
  EXPECT_THROW(Model(config, models::loadCell("gru"), &gru2),
               models::DataError);
}

// SR-NMT (--arch srnmt): per encoder unit W [3d, d] and its norm; per
// decoder unit W [3d, d], the layer-normed attention (Wa, Ua, v and two
// norms of A), Ws and Wc [d, d] and their norms; emb = hidden = d.
TEST(ParameterCount, SrnmtIsItsFormula) {
  for (int64_t layers : {1, 2, 4}) {
    ModelConfig config = smallConfig("atr", "srnmt");
    config.emb = config.hidden = 8;
    config.encLayers = config.decLayers = layers;
    auto model = makeModel(config, models::loadCell("atr"));
    const int64_t Vs = 11, Vt = 13, d = 8, A = 6;
    int64_t unit = 3 * d * d + 2 * 3 * d;
    int64_t attention = 2 * A * d + A + 2 * 2 * A;
    int64_t deepOutput = 2 * (d * d + 2 * d);
    int64_t expected = (Vs + Vt) * d + layers * unit +
                       layers * (unit + attention + deepOutput) + Vt * d + Vt;
    EXPECT_EQ(model->parameterCount(), expected) << layers << " layers";
    config.tieOutput = true; // SWord: the output weight is the embeddings
    EXPECT_EQ(makeModel(config, models::loadCell("atr"))->parameterCount(),
              expected - Vt * d);
  }
}

TEST(ParameterCount, SrnmtNeedsEmbAsWideAsHidden) {
  ModelConfig config = smallConfig("atr", "srnmt");
  EXPECT_THROW(makeModel(config, models::loadCell("atr")), models::DataError);
}

TEST(ParameterCount, SharingNeedsWhatItShares) {
  ModelConfig config = smallConfig("atr", "rnnsearch");
  config.shareCell = true;
  EXPECT_THROW(Model(config, models::loadCell("atr")), models::DataError);
  config = smallConfig("atr", "cseq2seq-2");
  config.tieOutput = true; // readout 4, emb 5
  EXPECT_THROW(Model(config, models::loadCell("atr")), models::DataError);
}

TEST(ParameterCount, LayerCountsOutsideTheArchitectureAreErrors) {
  ModelConfig config = smallConfig("atr", "rnnsearch");
  config.decLayers = 2;
  EXPECT_THROW(Model(config, models::loadCell("atr")), models::DataError);
  config = smallConfig("atr", "ca");
  config.encLayers = 3;
  EXPECT_THROW(Model(config, models::loadCell("atr")), models::DataError);
}

TEST(ParameterCount, CoversEveryBuiltinCell) {
  for (const std::string &cell : models::builtinCells())
    EXPECT_NO_THROW(cellParams(cell, 5, 7)) << cell << " has no formula";
}

} // namespace
