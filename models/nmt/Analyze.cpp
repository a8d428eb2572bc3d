//===- models/nmt/Analyze.cpp - Gates of a trained model -----------------===//

#include "models/nmt/Analyze.h"

#include "models/common/Cells.h"
#include "models/common/GateAnalysis.h"
#include "models/nmt/AttentionStats.h"
#include "models/nmt/Trainer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace nmt {

namespace {

/// What one side (a cell layer of the model) gave over all sentences.
struct SideStats {
  SideStats(std::string side, bool perStep)
      : side(std::move(side)), perStep(perStep) {}

  std::string side;
  /// Whether the recorder has one call per step (decoder) or one per batch.
  bool perStep = false;
  std::vector<std::string> gates;
  /// [gate][position]: the sum of the gate's unit means; counts[position].
  std::vector<std::vector<double>> sums;
  std::vector<int64_t> counts;
  /// [gate][every active (position, sentence)]: the unit mean.
  std::vector<std::vector<double>> all;
  struct Sentence {
    std::vector<std::string> words;
    std::vector<int64_t> links;
    std::vector<std::vector<double>> weights;
  };
  std::vector<Sentence> sentences;

  std::vector<double> means(size_t gate) const {
    std::vector<double> result;
    for (size_t t = 0; t < counts.size(); ++t)
      result.push_back(counts[t] ? sums[gate][t] / double(counts[t]) : 0.0);
    return result;
  }
};

/// The probe arrays of one layer, by (step, sentence).
struct Recorded {
  const ProbeRecorder &recorder;
  bool perStep;

  /// Probe p's row at step t of sentence b, and its width.
  const float *row(size_t p, int64_t t, int64_t b, int64_t &width) const {
    const ProbeRecorder::Call &call =
        recorder.calls.at(perStep ? size_t(t) : 0);
    width = int64_t(call.probes[p].size()) / (call.T * call.B);
    int64_t step = perStep ? 0 : t;
    return call.probes[p].data() + (step * call.B + b) * width;
  }
  double unitMean(size_t p, int64_t t, int64_t b) const {
    int64_t width;
    const float *values = row(p, t, b, width);
    double sum = 0;
    for (int64_t j = 0; j < width; ++j)
      sum += values[j];
    return sum / double(width);
  }
  /// Probe p of sentence b for steps 0..length-1, [length, width].
  std::vector<float> sequence(size_t p, int64_t b, int64_t length,
                              int64_t &width) const {
    std::vector<float> rows;
    for (int64_t t = 0; t < length; ++t) {
      const float *values = row(p, t, b, width);
      rows.insert(rows.end(), values, values + width);
    }
    return rows;
  }
};

/// `1-z` names the complement of the probe z (GRU's forget gate).
bool isComplement(const std::string &name) {
  return name.rfind("1-", 0) == 0;
}
std::string probedName(const std::string &name) {
  return isComplement(name) ? name.substr(2) : name;
}

/// The probe names: the gates, then any additive names not among them.
std::vector<std::string> probeNames(const AnalyzeRequest &r) {
  std::vector<std::string> names = r.gates;
  for (const std::string &additive : r.additive) {
    std::string name = probedName(additive);
    if (std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  }
  return names;
}

size_t indexOf(const std::vector<std::string> &names, const std::string &name) {
  return size_t(std::find(names.begin(), names.end(), name) - names.begin());
}

/// The values of the gate `name` (a probe, or `1-` and a probe) over
/// sentence `b`'s `length` steps, `width` units a step.
std::vector<float> gateSequence(const Recorded &recorded,
                                const std::vector<std::string> &probes,
                                const std::string &name, size_t b,
                                int64_t length, int64_t &width) {
  std::vector<float> values = recorded.sequence(
      indexOf(probes, probedName(name)), int64_t(b), length, width);
  if (isComplement(name))
    for (float &value : values)
      value = 1.0f - value;
  return values;
}

/// Adds one batch's probes of a side: the gates' unit means by position,
/// and the Eq. 10 weights of sentences while fewer than `wanted` are kept.
void collect(const Recorded &recorded, const std::vector<int32_t> &lengths,
             const std::vector<std::vector<std::string>> &words,
             const AnalyzeRequest &r, const std::vector<std::string> &probes,
             SideStats &stats) {
  for (size_t b = 0; b < lengths.size(); ++b) {
    int64_t length = lengths[b];
    if (int64_t(stats.counts.size()) < length) {
      stats.counts.resize(length, 0);
      for (auto &sums : stats.sums)
        sums.resize(length, 0.0);
    }
    for (int64_t t = 0; t < length; ++t) {
      ++stats.counts[t];
      for (size_t g = 0; g < stats.gates.size(); ++g) {
        double mean = recorded.unitMean(indexOf(probes, stats.gates[g]), t, b);
        stats.sums[g][t] += mean;
        stats.all[g].push_back(mean);
      }
    }
    if (r.additive.size() != 2 || int64_t(stats.sentences.size()) >= r.sentences)
      continue;
    int64_t width;
    std::vector<float> i =
        gateSequence(recorded, probes, r.additive[0], b, length, width);
    std::vector<float> f =
        gateSequence(recorded, probes, r.additive[1], b, length, width);
    models::AdditiveWeights weights(i.data(), f.data(), length, width);
    std::vector<std::vector<double>> means = weights.meanWeights();
    stats.sentences.push_back(
        {words[b], models::AdditiveWeights::strongestEarlier(means), means});
  }
}

using Json = nlohmann::ordered_json;

/// `value` to six significant digits, as the CSVs have it: the plots need
/// no more, and the file stays small.
double sixDigits(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return std::strtod(text, nullptr);
}

Json sixDigits(const std::vector<double> &values) {
  Json array = Json::array();
  for (double value : values)
    array.push_back(sixDigits(value));
  return array;
}

/// A matrix's rows, each as sixDigits gives it.
Json sixDigits(const std::vector<std::vector<double>> &rows) {
  Json array = Json::array();
  for (const std::vector<double> &row : rows)
    array.push_back(sixDigits(row));
  return array;
}

/// Pearson's r of the additive pair (else the first two gates): per
/// position (the paper's) and over all steps; null without two gates.
Json pearsonJson(const SideStats &stats, const AnalyzeRequest &r) {
  std::vector<std::string> pair = r.additive;
  // A complement (GRU's 1-z) would give r = -1 by construction.
  if (pair.size() != 2 || isComplement(pair[0]) || isComplement(pair[1]))
    pair.assign(stats.gates.begin(),
                stats.gates.begin() + std::min<size_t>(2, stats.gates.size()));
  size_t a = indexOf(stats.gates, pair.size() == 2 ? pair[0] : "");
  size_t b = indexOf(stats.gates, pair.size() == 2 ? pair[1] : "");
  if (a >= stats.gates.size() || b >= stats.gates.size())
    return nullptr;
  // A NaN r (a gate constant over the positions) is written as null.
  return {{"gates", pair},
          {"per_position",
           sixDigits(models::pearson(stats.means(a), stats.means(b)))},
          {"all_steps",
           sixDigits(models::pearson(stats.all[a], stats.all[b]))}};
}

Json sideJson(const SideStats &stats, const AnalyzeRequest &r) {
  Json side = {{"side", stats.side}, {"counts", stats.counts}};
  Json gates = Json::object();
  for (size_t g = 0; g < stats.gates.size(); ++g)
    gates[stats.gates[g]] = sixDigits(stats.means(g));
  side["gates"] = gates;
  if (Json pearson = pearsonJson(stats, r); !pearson.is_null())
    side["pearson"] = pearson;
  Json sentences = Json::array();
  for (const SideStats::Sentence &sentence : stats.sentences)
    sentences.push_back({{"words", sentence.words},
                         {"links", sentence.links},
                         {"weights", sixDigits(sentence.weights)}});
  side["sentences"] = sentences;
  return side;
}

Json attentionJson(const AttentionStats &stats) {
  Json examples = Json::array();
  for (const AttentionStats::Example &example : stats.examples())
    examples.push_back({{"source", example.source},
                        {"target", example.target},
                        {"weights", sixDigits(example.weights)}});
  return {{"steps", stats.steps()},
          {"entropy", sixDigits(stats.entropy())},
          {"normalized_entropy", sixDigits(stats.normalizedEntropy())},
          {"max_weight", sixDigits(stats.maxWeight())},
          {"on_last_word", sixDigits(stats.onLastWord())},
          {"diagonal_distance", sixDigits(stats.diagonalDistance())},
          {"examples", examples}};
}

/// The words each decoder step predicts: the inputs after <s>, then </s>.
std::vector<std::vector<std::string>>
outputWords(const std::vector<std::vector<std::string>> &inputWords) {
  std::vector<std::vector<std::string>> outputs;
  for (const std::vector<std::string> &words : inputWords) {
    outputs.emplace_back(words.begin() + (words.empty() ? 0 : 1), words.end());
    outputs.back().push_back("</s>");
  }
  return outputs;
}

void writeCsv(const SideStats &stats, const std::string &path) {
  std::ofstream out(path);
  out << "position,count";
  for (const std::string &gate : stats.gates)
    out << "," << gate;
  out << "\n";
  for (size_t t = 0; t < stats.counts.size(); ++t) {
    out << t + 1 << "," << stats.counts[t];
    for (size_t g = 0; g < stats.gates.size(); ++g)
      out << "," << stats.means(g)[t];
    out << "\n";
  }
  if (!out)
    throw DataError("cannot write " + path);
}

/// The name a cell goes by for its usual gates: a built-in's own, a file's
/// `:NAME`, else the first `cell NAME(` of its text outside comments (so a
/// copy of cells/lstm.cell with another initialiser keeps lstm's gates).
std::string declaredCellName(const ModelConfig &config) {
  size_t colon = config.cell.rfind(".cell:");
  if (colon != std::string::npos)
    return config.cell.substr(colon + 6);
  static const std::regex declaration(R"(\bcell\s+([A-Za-z_]\w*)\s*\()");
  std::istringstream lines(config.cellSource);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    std::string code = line.substr(0, line.find('#'));
    if (std::regex_search(code, match, declaration))
      return match[1];
  }
  return config.cell;
}

/// The gates and additive pair the request names, or the cell's usual ones.
void chooseGates(const std::string &cell, AnalyzeRequest &r) {
  static const std::map<std::string, std::vector<std::string>> usualGates = {
      {"atr", {"i", "f"}}, {"ran", {"i", "f"}}, {"lstm", {"i", "f"}},
      {"gru", {"z", "r"}}, {"lau", {"z", "r"}}, {"sru", {"f", "r"}}};
  if (r.gates.empty()) {
    auto usual = usualGates.find(cell);
    if (usual == usualGates.end())
      throw DataError("analyze: cell '" + cell +
                      "' has no usual gates; name them with --gates");
    r.gates = usual->second;
  }
  if (r.additive.size() == 1 && r.additive[0] == "none")
    r.additive.clear();
  else if (r.additive.empty() && (cell == "atr" || cell == "ran" ||
                                  cell == "lstm"))
    r.additive = {"i", "f"};
  else if (r.additive.empty() && cell == "gru")
    r.additive = {"1-z", "z"}; // h' = z * h + (1 - z) * c: z forgets
  if (!r.additive.empty() && r.additive.size() != 2)
    throw DataError("analyze: --additive takes the input and forget gates "
                    "(two names), or none");
}

/// Where plot_gates.py may be, in order: the installed data directory
/// relative to this executable (<prefix>/bin/nmt reads
/// <prefix>/share/cellc/), so an installed nmt works wherever the prefix
/// was moved, then the source tree this nmt was built from, for runs from
/// the build tree.
std::vector<std::filesystem::path> scriptCandidates(const std::string &name) {
  std::vector<std::filesystem::path> candidates;
  std::error_code error;
  std::filesystem::path self =
      std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error)
    candidates.push_back((self.parent_path() / CELLC_SCRIPTS_FROM_BINDIR / name)
                             .lexically_normal());
  candidates.push_back(std::filesystem::path(CELLC_SOURCE_DIR) / "scripts" /
                       name);
  return candidates;
}

/// The first candidate that exists; a DataError naming them all otherwise
/// (a broken install, or a build tree whose sources moved).
std::string findScript(const std::string &name) {
  std::vector<std::filesystem::path> candidates = scriptCandidates(name);
  std::string tried;
  for (const std::filesystem::path &candidate : candidates) {
    if (std::filesystem::exists(candidate))
      return candidate.string();
    tried += (tried.empty() ? "" : ", ") + candidate.string();
  }
  throw DataError("analyze: cannot find " + name + " (tried " + tried +
                  "); --no-plots skips the pictures");
}

void drawPlots(const std::string &json, const std::string &dir) {
  std::string script = findScript("plot_gates.py");
  if (!std::filesystem::exists("/usr/bin/python3")) {
    std::fprintf(stderr, "analyze: no pictures (%s needs /usr/bin/python3)\n",
                 script.c_str());
    return;
  }
  auto quote = [](const std::string &text) {
    std::string out = "'";
    for (char c : text)
      out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  };
  std::string command = "/usr/bin/python3 " + quote(script) + " " +
                        quote(json) + " " + quote(dir) + " 1>&2";
  if (std::system(command.c_str()) != 0)
    std::fprintf(stderr, "analyze: drawing failed (is python3-matplotlib "
                         "installed? scripts/setup.sh installs it)\n");
}

} // namespace

namespace {

/// The three sides of the model, filled batch by batch.
struct Analysis {
  AnalyzeRequest request;
  /// The request without Eq. 10 (decoder cell 2 reads contexts, not words).
  AnalyzeRequest noArcs;
  std::vector<std::string> probes;
  SideStats encoder{"encoder", false}, decoder{"decoder", true},
      decoder2{"decoder2", true};
  AttentionStats attention;
  /// Whether the model has an attention to record (RNNSearch, CA, deep).
  bool hasAttention = false;
  size_t sentences = 0;

  explicit Analysis(const AnalyzeRequest &r)
      : request(r), noArcs(r), probes(probeNames(r)), attention(r.sentences) {
    noArcs.additive.clear();
    for (SideStats *side : {&encoder, &decoder, &decoder2}) {
      side->gates = r.gates;
      side->sums.resize(r.gates.size());
      side->all.resize(r.gates.size());
    }
  }

  /// Force-decodes examples [start, start + batch size) with every layer
  /// recording the probed cell's values, and adds them to the sides.
  void addBatch(Session &session, const cellrt::Cell &probed,
                const std::vector<Example> &examples,
                const std::vector<std::string> &src,
                const std::vector<std::string> &tgt, size_t start);
  /// analysis.json, SIDE-gates.csv; returns the JSON's path.
  std::string write(const std::string &cell) const;
};

void Analysis::addBatch(Session &session, const cellrt::Cell &probed,
                        const std::vector<Example> &examples,
                        const std::vector<std::string> &src,
                        const std::vector<std::string> &tgt, size_t start) {
  std::vector<int64_t> indices;
  std::vector<std::vector<std::string>> srcWords, tgtWords;
  size_t end = std::min(examples.size(), start + size_t(request.batchSize));
  for (size_t i = start; i < end; ++i) {
    indices.push_back(int64_t(i));
    srcWords.push_back(session.codec.source(src[i]));
    srcWords.back().push_back("</s>");
    tgtWords.push_back({"<s>"});
    for (const std::string &word : session.codec.target(tgt[i]))
      tgtWords.back().push_back(word);
  }
  Batch batch = makeBatch(examples, indices);
  ModelProbes recorded;
  for (ProbeRecorder *recorder :
       {&recorded.encoderForward, &recorded.encoderBackward,
        &recorded.decoder1, &recorded.decoder2})
    recorder->probed = &probed;
  session.model->recordProbes(&recorded);
  std::vector<float> alpha;
  hasAttention = session.model->recordAttention(&alpha);
  session.model->loss(batch, false, nullptr);
  session.model->recordProbes(nullptr);
  session.model->recordAttention(nullptr);
  if (hasAttention)
    attention.add(alpha, batch.Ty, batch.Tx, batch.srcLen, batch.tgtLen,
                  srcWords, outputWords(tgtWords));
  collect({recorded.encoderForward, false}, batch.srcLen, srcWords, request,
          probes, encoder);
  collect({recorded.decoder1, true}, batch.tgtLen, tgtWords, request, probes,
          decoder);
  collect({recorded.decoder2, true}, batch.tgtLen, tgtWords, noArcs, probes,
          decoder2);
  sentences += indices.size();
}

std::string Analysis::write(const std::string &cell) const {
  std::filesystem::create_directories(request.out);
  std::string json = request.out + "/analysis.json";
  Json analysis = {
      {"cell", cell},
      {"sentences", sentences},
      {"forced", request.ownTranslation ? "own translation" : "reference"},
      {"sides",
       {sideJson(encoder, request), sideJson(decoder, request),
        sideJson(decoder2, noArcs)}}};
  if (hasAttention)
    analysis["attention"] = attentionJson(attention);
  std::ofstream out(json);
  // Words that are not UTF-8 become U+FFFD rather than a thrown error.
  out << analysis.dump(-1, ' ', false, Json::error_handler_t::replace)
      << "\n";
  if (!out)
    throw DataError("cannot write " + json);
  for (const SideStats *side : {&encoder, &decoder, &decoder2})
    writeCsv(*side, request.out + "/" + side->side + "-gates.csv");
  return json;
}

} // namespace

/// One line a person can compare between checkpoints.
static void printAttention(const AttentionStats &stats) {
  std::fprintf(stderr,
               "analyze: attention over %lld target steps: entropy %.3f nats "
               "(%.3f of uniform), largest weight %.3f, on the source's last "
               "word %.3f, argmax off the diagonal by %.3f\n",
               (long long)stats.steps(), stats.entropy(),
               stats.normalizedEntropy(), stats.maxWeight(), stats.onLastWord(),
               stats.diagonalDistance());
}

void analyze(const AnalyzeRequest &request) {
  AnalyzeRequest r = request;
  auto session = Session::load(r.model);
  const ModelConfig &config = session->options.model;
  chooseGates(declaredCellName(config), r);
  std::vector<std::string> src = readLines(r.src), tgt = readLines(r.ref);
  if (r.ownTranslation)
    session->translate(src, r.beam, 1.0f, r.batchSize, &tgt);
  if (src.size() != tgt.size())
    throw DataError("analyze: " + r.src + " has " + std::to_string(src.size()) +
                    " lines but " + r.ref + " has " +
                    std::to_string(tgt.size()));
  Analysis analysis(r);
  const cellrt::Cell &probed =
      loadProbedCell(config.cell, config.cellSource, analysis.probes);
  std::vector<Example> examples = session->examples(src, tgt, false);
  for (size_t start = 0; start < examples.size(); start += r.batchSize)
    analysis.addBatch(*session, probed, examples, src, tgt, start);
  std::string json = analysis.write(declaredCellName(config));
  std::fprintf(stderr, "analyze: %zu sentences; wrote %s and *-gates.csv\n",
               analysis.sentences, json.c_str());
  if (analysis.hasAttention)
    printAttention(analysis.attention);
  if (!r.noPlots)
    drawPlots(json, r.out);
}

} // namespace nmt
