//===- models/nmt/Translator.cpp - Translating raw lines ------------------===//

#include "models/nmt/Translator.h"

#include "models/nmt/Ensemble.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace nmt {

namespace {

/// The lines' source ids; a line longer than 4 x --max-len tokens is cut
/// there (the decoder's length limit follows from --max-len), with a
/// warning naming it.
std::vector<std::vector<int32_t>>
encodeSources(const Session &session, const std::vector<std::string> &lines) {
  std::vector<std::vector<int32_t>> sources;
  for (const auto &line : lines) {
    auto ids = session.srcVocab.encode(session.codec.source(line));
    int64_t limit = 4 * session.options.maxLen;
    if (int64_t(ids.size()) > limit) {
      std::fprintf(stderr,
                   "nmt: warning: input line %zu has %zu tokens; only the "
                   "first %lld (4 x --max-len) are translated\n",
                   sources.size() + 1, ids.size(), (long long)limit);
      ids.resize(size_t(limit));
    }
    sources.push_back(std::move(ids));
  }
  return sources;
}

void checkDecodeOptions(const DecodeOptions &o) {
  if (o.beam < 1 || o.batchSize < 1 || !std::isfinite(o.lengthPenalty))
    throw DataError("translate: beam " + std::to_string(o.beam) +
                    " and batch size " + std::to_string(o.batchSize) +
                    " must be at least 1, the length penalty finite");
  if (o.nBest < 1 || o.nBest > o.beam)
    throw DataError("translate: --n-best " + std::to_string(o.nBest) +
                    " must be 1 to the beam size (" + std::to_string(o.beam) +
                    ")");
}

} // namespace

std::vector<std::vector<Translation>>
translateLines(const std::vector<Session *> &sessions,
               const std::vector<std::string> &lines,
               const DecodeOptions &options, int64_t *wordsOut) {
  checkDecodeOptions(options);
  const Session &first = *sessions.at(0);
  std::vector<TranslationModel *> models;
  for (Session *session : sessions)
    models.push_back(session->model.get());
  std::vector<std::vector<int32_t>> sources = encodeSources(first, lines);
  std::vector<int64_t> order(lines.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return sources[a].size() < sources[b].size();
  });
  std::vector<std::vector<Translation>> out(lines.size());
  int64_t words = 0;
  const size_t step = size_t(options.batchSize);
  for (size_t start = 0; start < order.size(); start += step) {
    std::vector<int64_t> idx(order.begin() + start,
                             order.begin() +
                                 std::min(order.size(), start + step));
    Batch batch = makeSourceBatch(sources, idx);
    auto result =
        searchBatch(models, batch, options.beam, 2 * first.options.maxLen + 10,
                    options.lengthPenalty)
            .nBest(options.nBest);
    for (size_t k = 0; k < idx.size(); ++k)
      for (const Hypothesis &hyp : result[k]) {
        auto tokens = first.tgtVocab.decode(hyp.tokens);
        if (out[idx[k]].empty())
          words += int64_t(tokens.size()) + 1;
        out[idx[k]].push_back({first.codec.detokenized(tokens),
                               first.codec.tokenized(tokens), hyp.score});
      }
  }
  if (wordsOut)
    *wordsOut = words;
  return out;
}

std::vector<std::string>
Session::translate(const std::vector<std::string> &lines, int64_t beam,
                   float lengthPenalty, int64_t batchSize,
                   std::vector<std::string> *tokenizedOut, int64_t *wordsOut) {
  DecodeOptions options;
  options.beam = beam;
  options.batchSize = batchSize;
  options.lengthPenalty = lengthPenalty;
  auto translations = translateLines({this}, lines, options, wordsOut);
  std::vector<std::string> out(lines.size());
  if (tokenizedOut)
    tokenizedOut->assign(lines.size(), "");
  for (size_t i = 0; i < lines.size(); ++i) {
    if (translations[i].empty())
      continue;
    out[i] = translations[i][0].text;
    if (tokenizedOut)
      (*tokenizedOut)[i] = translations[i][0].tokenized;
  }
  return out;
}

} // namespace nmt
