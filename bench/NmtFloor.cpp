//===- NmtFloor.cpp - An NMT model's words/s against its GEMM floor -------===//
//
//   nmt-floor --model CKPT [--updates N] [--sentences K] [--beam B]
//             [--reps R] [--threads N] [--precision f32|bf16]
//             [--real-only [--default-schedule]]
//
// Issue #47's NMT floor. From a trained checkpoint and the data its options
// name, it times N real training updates (forward, backward, Adam) on the
// recipe's token batches and beam decoding of K validation sentences (each
// after one untimed pass, the median of R passes), while
// recording every matrix product they run (cellrt/Products.h for the cells,
// models::setLayerProductObserver for the layers; tiles off so that each
// product is seen once). Then it times that list of products alone, on the
// same GEMM entry points with the same shapes (the GEMM floor), and divides
// its flops by this machine's dnnl_sgemm rate at n = 2048 (the flop floor).
// In bf16 (--precision bf16, or a bf16 checkpoint) every product is replayed
// through cellrt::multiply in bf16 (operands rounded each time, so the floor
// includes the rounding that the model partly saves by keeping rounded
// copies), and the flop floor is at that function's rate at n = 2048.
// The real run takes the per-step schedule, whose products the floor
// records (no tiles); --real-only --default-schedule times cellrt's
// default, tiles where they pay.
// The cells' products are replayed through cellrt's own GEMM functions, so
// that at --threads N the small ones run on one thread as cellrt runs them
// (OneDnn.h); the layers' through dnnl_sgemm, as models::gemm calls it.
//
//===----------------------------------------------------------------------===//

#include "cellrt/Products.h"
#include "cellrt/Runtime.h"
#include "models/common/Math.h"
#include "models/common/OpenMpWaits.h"
#include "models/nmt/Translator.h"
#include "runtime/Gemm.h"

#include <CLI/CLI.hpp>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;

/// The real timings alone (for a profiler: no recording, no replay).
bool realOnly = false;

/// What the products multiply in (--precision; the checkpoint's by default).
cellrt::Precision precision = cellrt::Precision::F32;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// One recorded product, as dnnl_sgemm arguments (row-major): C[m, n] =
/// op(A)[m, k] · op(B)[k, n] (+ beta C).
struct Product {
  bool transA, transB;
  int64_t m, n, k;
  float beta;
  bool cell, packed;
  cellrt::ProductRecord::Kind kind = cellrt::ProductRecord::Kind::Forward;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
};

/// Records every product from construction to destruction.
class Recorder {
public:
  explicit Recorder(std::vector<Product> &list) {
    models::setLayerProductObserver([&list](const models::LayerProduct &p) {
      list.push_back({p.transA, p.transB, p.m, p.n, p.k, p.beta, false, false});
    });
    cellrt::setProductObserver([&list](const cellrt::ProductRecord &r) {
      using Kind = cellrt::ProductRecord::Kind;
      // Forward: IN · Wᵀ; backward: OUT += IN · W; weight gradient:
      // dW += dYᵀ · X (Execution.cpp).
      bool transA = r.kind == Kind::WeightGradient;
      bool transB = r.kind == Kind::Forward;
      float beta = r.kind == Kind::Forward ? 0.f : 1.f;
      list.push_back(
          {transA, transB, r.m, r.n, r.k, beta, true, r.packed, r.kind});
    });
  }
  ~Recorder() {
    models::setLayerProductObserver({});
    cellrt::setProductObserver({});
  }
};

/// Operands big enough for every product of `list`, and packed weights for
/// its packed ones, made once; run() multiplies the list.
class Replay {
public:
  explicit Replay(const std::vector<Product> &list) : list(list) {
    int64_t largest = 1;
    for (const Product &p : list)
      largest = std::max({largest, p.m * p.k, p.k * p.n, p.m * p.n});
    a.assign(largest, 0.01f);
    b.assign(largest, 0.02f);
    c.assign(largest, 0.f);
    for (const Product &p : list)
      if (p.packed && !packs.count({p.n, p.k}))
        packs[{p.n, p.k}] = pack(p);
  }

  void run() {
    for (const Product &p : list) {
      if (p.packed && !p.transA) {
        const cellrt::PackedProduct &w = *packs.at({p.n, p.k});
        if (!w.multiply(p.m, a.data(), p.k, c.data(), p.n).ok())
          std::abort();
        continue;
      }
      if (precision == cellrt::Precision::BF16) {
        // The cells' bf16 products and the layers' (models::gemm) both
        // round their operands and multiply through cellrt's gemmBf16.
        if (!bf16Product(p).ok())
          std::abort();
        continue;
      }
      if (p.cell) {
        if (!cellProduct(p).ok())
          std::abort();
        continue;
      }
      int64_t lda = p.transA ? p.m : p.k, ldb = p.transB ? p.k : p.n;
      if (dnnl_sgemm(p.transA ? 'T' : 'N', p.transB ? 'T' : 'N', p.m, p.n, p.k,
                     1.0f, a.data(), lda, b.data(), ldb, p.beta, c.data(),
                     p.n) != dnnl_success)
        std::abort();
    }
  }

private:
  /// A cell's product through the function cellrt ran it with
  /// (Execution::runGemm, the weight-gradient loop).
  cellrt::Status cellProduct(const Product &p) {
    using Kind = cellrt::ProductRecord::Kind;
    namespace d = cellrt::detail;
    switch (p.kind) {
    case Kind::Forward:
      return d::gemmTransposedWeight(p.m, p.n, p.k, a.data(), p.k, b.data(),
                                     p.k, c.data(), p.n);
    case Kind::Backward:
      return d::gemmAccumulate(p.m, p.n, p.k, a.data(), p.k, b.data(), p.n,
                               c.data(), p.n);
    case Kind::WeightGradient:
      break;
    }
    return d::gemmAccumulateTransposedInput(p.m, p.n, p.k, a.data(), p.m,
                                            b.data(), p.n, c.data(), p.n);
  }

  cellrt::Status bf16Product(const Product &p) {
    int64_t lda = p.transA ? p.m : p.k, ldb = p.transB ? p.k : p.n;
    return cellrt::multiply(cellrt::Precision::BF16, p.transA, p.transB, p.m,
                            p.n, p.k, a.data(), lda, b.data(), ldb, p.beta,
                            c.data(), p.n);
  }

  std::unique_ptr<cellrt::PackedProduct> pack(const Product &p) {
    std::string error;
    using Use = cellrt::PackedProduct::Use;
    // A forward product reads the weight [n, k]; a backward one [k, n].
    auto packed =
        p.transB
            ? cellrt::PackedProduct::pack(b.data(), p.n, p.k, error, precision)
            : cellrt::PackedProduct::pack(b.data(), p.k, p.n, error, precision,
                                          Use::Backward);
    if (!packed) {
      std::fprintf(stderr, "nmt-floor: %s\n", error.c_str());
      std::exit(1);
    }
    return packed;
  }

  const std::vector<Product> &list;
  std::vector<float> a, b, c;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<cellrt::PackedProduct>>
      packs;
};

double totalFlops(const std::vector<Product> &list, bool cellsOnly) {
  double sum = 0;
  for (const Product &p : list)
    if (!cellsOnly || p.cell)
      sum += p.flops();
  return sum;
}

/// The best of `reps` timings of the list's products alone.
double replaySeconds(const std::vector<Product> &list, int reps) {
  Replay replay(list);
  replay.run(); // warm-up: primitives made, caches filled
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    replay.run();
    best = std::min(best, secondsSince(start));
  }
  return best;
}

/// The rate at n = 2048, flop/s, of dnnl_sgemm (bench/PeakBench.cpp's
/// `sgemm`), or in bf16 of cellrt::multiply (operands rounded, then
/// oneDNN's bf16 matmul).
double peakRate() {
  const int64_t n = 2048;
  std::vector<float> a(n * n, 0.01f), b(n * n, 0.02f), c(n * n);
  double best = 1e30;
  for (int i = 0; i < 4; ++i) {
    auto start = Clock::now();
    if (precision == cellrt::Precision::BF16) {
      if (!cellrt::multiply(precision, false, true, n, n, n, a.data(), n,
                            b.data(), n, 0.0f, c.data(), n)
               .ok())
        std::abort();
    } else {
      dnnl_sgemm('N', 'T', n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
                 c.data(), n);
    }
    best = std::min(best, secondsSince(start));
  }
  return 2.0 * double(n) * n * n / best;
}

/// What a product's line in --by-shape names: where it ran (a cell's
/// forward, backward or weight gradient, or a layer's), its shape and
/// whether it read a packed weight.
std::string describe(const Product &p) {
  using Kind = cellrt::ProductRecord::Kind;
  const char *what = !p.cell                    ? "layer"
                     : p.kind == Kind::Forward  ? "cell forward"
                     : p.kind == Kind::Backward ? "cell backward"
                                                : "cell weight grad";
  // op(A)[m, k] · op(B)[k, n], T where the operand is read transposed.
  char line[160];
  std::snprintf(line, sizeof(line),
                "%-16s %s [%lld, %lld]%s x [%lld, %lld]%s%s", what,
                p.beta != 0.f ? "+=" : " =", (long long)p.m, (long long)p.k,
                p.transA ? "T" : "", (long long)p.k, (long long)p.n,
                p.transB ? "T" : "", p.packed ? " packed" : "");
  return line;
}

/// The `top` shapes whose products take the most of the GEMM floor, each
/// shape's products replayed alone: how often it runs, its time and its
/// rate against the peak. The products that run far under the peak are
/// where a model loses to its flop floor.
void reportShapes(const std::vector<Product> &list, double peak, int64_t top) {
  std::map<std::string, std::vector<Product>> groups;
  for (const Product &p : list)
    groups[describe(p)].push_back(p);
  struct Row {
    std::string shape;
    size_t count;
    double seconds, flops;
  };
  std::vector<Row> rows;
  double total = 0;
  for (const auto &[shape, products] : groups) {
    double seconds = replaySeconds(products, 3);
    rows.push_back(
        {shape, products.size(), seconds, totalFlops(products, false)});
    total += seconds;
  }
  std::sort(rows.begin(), rows.end(),
            [](const Row &x, const Row &y) { return x.seconds > y.seconds; });
  std::printf("  %zu shapes; the %lld slowest in all (%% of their sum, "
              "GFLOP/s, %% of peak):\n",
              rows.size(), (long long)top);
  for (size_t i = 0; i < rows.size() && int64_t(i) < top; ++i) {
    const Row &row = rows[i];
    double rate = row.flops / row.seconds;
    std::printf("  %6zu x %-58s %8.1f ms %5.1f%% %7.1f %4.0f%%\n", row.count,
                row.shape.c_str(), 1e3 * row.seconds, 100 * row.seconds / total,
                rate / 1e9, 100 * rate / peak);
  }
}

struct Measured {
  double seconds = 0;
  int64_t words = 0; // target words (training: real target tokens)
  std::vector<Product> products;
};

/// Timed passes per measurement (--reps): the median is reported.
int64_t reps = 3;

/// The median of `reps` timings of `pass`.
template <typename Pass> double medianSeconds(Pass pass) {
  std::vector<double> times;
  for (int64_t i = 0; i < reps; ++i) {
    auto start = Clock::now();
    pass();
    times.push_back(secondsSince(start));
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

/// N training updates on the first batches of the recipe's epoch-1 order,
/// after one untimed pass over the same batches: the model's buffers have
/// grown to their largest, as in a long run, so growing them is not timed.
Measured trainUpdates(nmt::Session &session, int64_t updates) {
  nmt::TrainData data = nmt::loadTrainData(session.options);
  auto examples = session.examples(data.trainSrc, data.trainTgt, true);
  models::Rng orderRng(session.options.seed);
  auto batches =
      models::makeBatchOrder(examples, session.options.maxTokens, orderRng);
  auto params = session.model->params();
  models::Rng dropout(7);
  Measured m;
  auto step = [&](int64_t i) {
    models::Batch batch = models::makeBatch(examples, batches[i]);
    models::zeroGrads(params);
    session.model->loss(batch, true, &dropout);
    session.adam.update(params, models::gradientNorm(params));
    return batch.targetTokens;
  };
  auto pass = [&] {
    m.words = 0;
    for (int64_t i = 1; i <= updates; ++i)
      m.words += step(i);
  };
  pass(); // warm-up
  m.seconds = medianSeconds(pass);
  if (realOnly)
    return m;
  Recorder recorder(m.products);
  for (int64_t i = 1; i <= updates; ++i)
    step(i);
  return m;
}

/// Beam decoding of the first `sentences` validation sentences.
Measured decode(nmt::Session &session, int64_t sentences, int64_t beam) {
  nmt::TrainData data = nmt::loadTrainData(session.options);
  std::vector<std::string> lines(
      data.validSrc.begin(),
      data.validSrc.begin() +
          std::min<int64_t>(sentences, int64_t(data.validSrc.size())));
  nmt::DecodeOptions options;
  options.beam = beam;
  Measured m;
  std::vector<nmt::Session *> models = {&session};
  auto pass = [&] {
    m.words = 0;
    nmt::translateLines(models, lines, options, &m.words);
  };
  pass(); // warm-up
  m.seconds = medianSeconds(pass);
  if (realOnly)
    return m;
  Recorder recorder(m.products);
  nmt::translateLines(models, lines, options);
  return m;
}

/// Shapes listed per report (--by-shape); 0: none.
int64_t shapesShown = 0;

void report(const char *what, const Measured &m, double peak) {
  if (realOnly) {
    std::printf("%s: real %.3f s, %.0f target words/s\n", what, m.seconds,
                m.words / m.seconds);
    return;
  }
  double floor = replaySeconds(m.products, 3);
  double flops = totalFlops(m.products, false);
  double flopFloor = flops / peak;
  std::printf("%s: %lld products, %.2f GFLOP (cells %.0f%%)\n", what,
              (long long)m.products.size(), flops / 1e9,
              100 * totalFlops(m.products, true) / flops);
  std::printf("  real        %8.3f s  %9.0f target words/s\n", m.seconds,
              m.words / m.seconds);
  std::printf("  GEMM floor  %8.3f s  %9.0f target words/s  real/floor "
              "%.2fx\n",
              floor, m.words / floor, m.seconds / floor);
  std::printf("  flop floor  %8.3f s  %9.0f target words/s  real/floor "
              "%.2fx\n",
              flopFloor, m.words / flopFloor, m.seconds / flopFloor);
  if (shapesShown > 0)
    reportShapes(m.products, peak, shapesShown);
}

} // namespace

int main(int argc, char **argv) {
  // As the drivers run: one OpenMP team for the products and the kernels,
  // spinning briefly between them (OpenMpWaits.h; may restart).
  models::useOneThreadTeam(argv);
  CLI::App app("nmt-floor: an NMT model's training and decoding against the "
               "time its matrix products alone take (issue #47)");
  std::string model;
  int64_t updates = 20, sentences = 100, beam = 5, threads = 1;
  app.add_option("--model", model, "checkpoint (its options name the data)")
      ->required();
  app.add_option("--updates", updates, "training updates timed")
      ->capture_default_str();
  app.add_option("--sentences", sentences, "validation sentences decoded")
      ->capture_default_str();
  app.add_option("--beam", beam, "beam size")->capture_default_str();
  app.add_option("--reps", reps, "timed passes; the median is reported")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--threads", threads, "OpenMP threads, as nmt's")
      ->capture_default_str();
  std::string precisionName;
  app.add_option("--precision", precisionName,
                 "f32 or bf16: what every product multiplies in (default: "
                 "the checkpoint's); the floor replays the products in it")
      ->check(CLI::IsMember({"f32", "bf16"}));
  bool defaultSchedule = false;
  app.add_flag("--default-schedule", defaultSchedule,
               "with --real-only: cellrt's default schedule, tiles where they "
               "pay (otherwise the per-step schedule, whose products the "
               "floor records)");
  app.add_flag("--real-only", realOnly,
               "time the model alone: no recording, no replay (to profile)");
  app.add_option("--by-shape", shapesShown,
                 "also list the N shapes whose products take longest, each "
                 "replayed alone, with its rate against the peak")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  // Each product seen once (Products.h): no tiles. At several threads a
  // product is still recorded once (runGemm runs it whole on the team).
  if (defaultSchedule && !realOnly) {
    std::fprintf(stderr, "nmt-floor: --default-schedule needs --real-only\n");
    return 2;
  }
  if (!defaultSchedule)
    setenv("CELLRT_TILED_STEPS", "0", 1);
  models::setThreads(int(threads));
  try {
    std::unique_ptr<nmt::Session> session = nmt::Session::load(model);
    if (!precisionName.empty())
      session->changePrecision(precisionName);
    precision = models::productPrecision();
    double peak = peakRate();
    std::printf("%s: arch %s, cell %s, width %lld, %s; %s peak %.1f GFLOP/s "
                "(%lld thread%s)\n",
                model.c_str(), session->options.model.arch.c_str(),
                session->options.model.cell.c_str(),
                (long long)session->options.model.hidden,
                session->options.precision.c_str(),
                precision == cellrt::Precision::BF16 ? "bf16 matmul" : "sgemm",
                peak / 1e9, (long long)threads, threads == 1 ? "" : "s");
    report("training", trainUpdates(*session, updates), peak);
    report("decoding", decode(*session, sentences, beam), peak);
  } catch (const std::exception &error) {
    std::fprintf(stderr, "nmt-floor: %s\n", error.what());
    return 1;
  }
  return 0;
}
