//===- ProbeTest.cpp - Probes: named values of the step, per step ---------===//
//
// `cellc --probe NAME` (CompileOptions::probes) makes the kernels also write
// values of the step after the output; the runtime returns each in its own
// array. What must hold beyond `cellc check --probe` (which compares the
// values with the reference, test/tools/check-probes.test): probing changes
// no output, state or gradient, Cell::step gives the same probes as a whole
// sequence, and wrong probe arrays are named errors.
//
//===----------------------------------------------------------------------===//

#include "jit/Jit.h"

#include "cellrt/Runtime.h"
#include "cellrt/cellrt.h"

#include "gtest/gtest.h"

#include <cstring>
#include <map>
#include <random>

using namespace cellc;

namespace {

const char *const kLstmPath = CELLC_SOURCE_DIR "/cells/lstm.cell";
constexpr int64_t T = 4, B = 3, I = 5, H = 6;

/// A cell compiled through the JIT (no cache), kept with its code.
struct Compiled {
  explicit Compiled(std::vector<std::string> probes) {
    jit::CompileOptions options;
    options.cacheDir = "";
    options.probes = std::move(probes);
    auto result = jit::compileFile(kLstmPath, options);
    EXPECT_TRUE(result.ok()) << result.error();
    code = std::make_unique<jit::CompiledCell>(std::move(*result));
    auto loaded = cellrt::Cell::load(code->image());
    EXPECT_TRUE(loaded.ok()) << loaded.error();
    cell = std::make_unique<cellrt::Cell>(std::move(*loaded));
  }
  std::unique_ptr<jit::CompiledCell> code;
  std::unique_ptr<cellrt::Cell> cell;
};

std::vector<float> randomValues(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  std::vector<float> values(count);
  for (float &value : values)
    value = uniform(rng);
  return values;
}

/// An LSTM batch with ragged lengths, run forward in training mode and
/// backward, with probe arrays for every probe the cell was compiled with.
struct LstmRun {
  std::vector<float> x = randomValues(T * B * I, 1), h0 = randomValues(B * H, 2),
                     c0 = randomValues(B * H, 3),
                     dOut = randomValues(T * B * H, 7);
  /// Every param of the LSTM: Wi..Wg [H, I], Ui..Ug [H, H], bi..bg [H].
  std::map<std::string, std::vector<float>> params;
  std::map<std::string, std::vector<int64_t>> shapes;
  std::vector<int32_t> lengths = {4, 1, 3};
  std::vector<float> out = std::vector<float>(T * B * H),
                     hT = std::vector<float>(B * H),
                     cT = std::vector<float>(B * H),
                     dx = std::vector<float>(T * B * I),
                     dWi = std::vector<float>(H * I);
  std::vector<std::vector<float>> probes;

  void run(const cellrt::Cell &cell, bool reverse) {
    cellrt::ForwardArgs args = forwardArgs(cell, reverse);
    cellrt::Tape tape;
    ASSERT_TRUE(cell.forward(args, tape).ok());
    cellrt::BackwardArgs grads;
    grads.outputGradient = {dOut.data(), {T, B, H}};
    grads.inputGradients = {{dx.data(), {T, B, I}}};
    grads.paramGradients["Wi"] = {dWi.data(), {H, I}};
    cellrt::Status status = cell.backward(args, grads, tape);
    ASSERT_TRUE(status.ok()) << status.message();
  }

  cellrt::ForwardArgs forwardArgs(const cellrt::Cell &cell, bool reverse) {
    cellrt::ForwardArgs args;
    args.inputs = {{x.data(), {T, B, I}}};
    args.lengths = lengths.data();
    args.initialStates = {{h0.data(), {B, H}}, {c0.data(), {B, H}}};
    unsigned seed = 10;
    for (const char *gate : {"i", "f", "o", "g"})
      for (auto [prefix, shape] :
           {std::pair<std::string, std::vector<int64_t>>{"W", {H, I}},
            {"U", {H, H}},
            {"b", {H}}}) {
        std::string name = prefix + gate;
        shapes[name] = shape;
        if (!params.count(name))
          params[name] = randomValues(shape.size() == 2 ? shape[0] * shape[1]
                                                        : shape[0],
                                      seed);
        ++seed;
        args.params[name] = {params[name].data(), shapes[name]};
      }
    args.reverse = reverse;
    args.output = {out.data(), {T, B, H}};
    args.finalStates = {{hT.data(), {B, H}}, {cT.data(), {B, H}}};
    probes.assign(cell.getPlan().probes.size(),
                  std::vector<float>(T * B * H, -1.0f));
    for (std::vector<float> &probe : probes)
      args.probes.push_back({probe.data(), {T, B, H}});
    return args;
  }
};

TEST(Probes, ChangeNoOutputStateOrGradient) {
  Compiled plain({}), probed({"f", "c'"});
  EXPECT_TRUE(plain.cell->getPlan().probes.empty());
  ASSERT_EQ(probed.cell->getPlan().probes.size(), 2u);
  EXPECT_EQ(probed.cell->getPlan().probes[1].name, "c'");
  for (bool reverse : {false, true}) {
    LstmRun without, with;
    without.run(*plain.cell, reverse);
    with.run(*probed.cell, reverse);
    EXPECT_EQ(with.out, without.out);
    EXPECT_EQ(with.hT, without.hT);
    EXPECT_EQ(with.cT, without.cT);
    EXPECT_EQ(with.dx, without.dx);
    EXPECT_EQ(with.dWi, without.dWi);
    // c' at a sequence's last step is its final cell state; padded steps
    // are zeros, and a forget gate lies in (0, 1).
    for (int64_t b = 0; b < B; ++b) {
      int64_t last = reverse ? 0 : with.lengths[b] - 1;
      for (int64_t j = 0; j < H; ++j) {
        EXPECT_EQ(with.probes[1][(last * B + b) * H + j], with.cT[b * H + j]);
        for (int64_t t = 0; t < T; ++t) {
          float f = with.probes[0][(t * B + b) * H + j];
          if (t < with.lengths[b])
            EXPECT_TRUE(f > 0.0f && f < 1.0f) << f;
          else
            EXPECT_EQ(f, 0.0f);
        }
      }
    }
  }
}

TEST(Probes, OfAStepAreThoseOfTheSequence) {
  Compiled probed({"i", "o"});
  LstmRun sequence;
  sequence.lengths = {T, T, T};
  cellrt::ForwardArgs args = sequence.forwardArgs(*probed.cell, false);
  ASSERT_TRUE(probed.cell->forward(args).ok());

  std::vector<float> h = sequence.h0, c = sequence.c0, hNext(B * H),
                     cNext(B * H), out(B * H), i(B * H), o(B * H);
  for (int64_t t = 0; t < T; ++t) {
    cellrt::StepArgs step;
    step.inputs = {{sequence.x.data() + t * B * I, {B, I}}};
    step.states = {{h.data(), {B, H}}, {c.data(), {B, H}}};
    step.params = args.params;
    step.output = {out.data(), {B, H}};
    step.nextStates = {{hNext.data(), {B, H}}, {cNext.data(), {B, H}}};
    step.probes = {{i.data(), {B, H}}, {o.data(), {B, H}}};
    ASSERT_TRUE(probed.cell->step(step).ok());
    EXPECT_EQ(i, std::vector<float>(sequence.probes[0].begin() + t * B * H,
                                    sequence.probes[0].begin() +
                                        (t + 1) * B * H));
    EXPECT_EQ(o, std::vector<float>(sequence.probes[1].begin() + t * B * H,
                                    sequence.probes[1].begin() +
                                        (t + 1) * B * H));
    h = hNext;
    c = cNext;
  }
}

// The C API: probes are named and written as through the C++ API.
TEST(Probes, ThroughTheCApi) {
  Compiled probed({"f", "c'"});
  LstmRun run;
  cellrt::ForwardArgs args = run.forwardArgs(*probed.cell, false);
  ASSERT_TRUE(probed.cell->forward(args).ok());

  cellrt_cell *cell = cellrt_cell_load(probed.code->image());
  ASSERT_NE(cell, nullptr) << cellrt_last_error();
  ASSERT_EQ(cellrt_cell_num_probes(cell), 2);
  EXPECT_STREQ(cellrt_cell_probe_name(cell, 1), "c'");
  EXPECT_EQ(cellrt_cell_probe_name(cell, 2), nullptr);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < cellrt_cell_num_dims(cell); ++d)
    dims.push_back(std::string(cellrt_cell_dim_name(cell, d)) == "H" ? H : I);
  std::vector<cellrt_param> params;
  for (auto &[name, values] : run.params)
    params.push_back({name.c_str(), values.data()});
  std::vector<float> f(T * B * H), c(T * B * H);
  const float *inputs[] = {run.x.data()};
  const float *initial[] = {run.h0.data(), run.c0.data()};
  float *probes[] = {f.data(), c.data()};
  cellrt_run_args c_args;
  std::memset(&c_args, 0, sizeof c_args);
  c_args.steps = T;
  c_args.batch = B;
  c_args.dims = dims.data();
  c_args.inputs = inputs;
  c_args.lengths = run.lengths.data();
  c_args.initial_states = initial;
  c_args.params = params.data();
  c_args.num_params = static_cast<int64_t>(params.size());
  c_args.probes = probes;
  ASSERT_EQ(cellrt_forward(cell, &c_args, nullptr), 0) << cellrt_last_error();
  EXPECT_EQ(f, run.probes[0]);
  EXPECT_EQ(c, run.probes[1]);
  cellrt_cell_free(cell);
}

TEST(Probes, WrongArraysAreNamedErrors) {
  Compiled probed({"f"});
  LstmRun run;
  cellrt::ForwardArgs args = run.forwardArgs(*probed.cell, false);
  std::vector<float> extra(T * B * H);
  args.probes.push_back({extra.data(), {T, B, H}});
  cellrt::Status tooMany = probed.cell->forward(args);
  EXPECT_NE(tooMany.message().find("2 probe arrays"), std::string::npos)
      << tooMany.message();
  args.probes.pop_back();
  args.probes[0].shape = {T, B, H + 1};
  cellrt::Status misShaped = probed.cell->forward(args);
  EXPECT_NE(misShaped.message().find("probe 'f'"), std::string::npos)
      << misShaped.message();
}

TEST(Probes, UnknownNamesAreLocatedCompileErrors) {
  jit::CompileOptions options;
  options.cacheDir = "";
  options.probes = {"forget"};
  auto result = jit::compileFile(kLstmPath, options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().find("lstm.cell:"), std::string::npos)
      << result.error();
  EXPECT_NE(result.error().find("no value named 'forget'"), std::string::npos)
      << result.error();
}

} // namespace
