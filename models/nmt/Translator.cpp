//===- models/nmt/Translator.cpp - Translating raw lines ------------------===//

#include "models/nmt/Translator.h"

#include "models/common/ThreadsHere.h"
#include "models/nmt/Ensemble.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

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

/// The lines' indices, shortest source first (a stable sort), cut into
/// batches of `batchSize`: what each decoding call gets, in order.
std::vector<std::vector<int64_t>>
lengthBatches(const std::vector<std::vector<int32_t>> &sources,
              int64_t batchSize) {
  std::vector<int64_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return sources[a].size() < sources[b].size();
  });
  std::vector<std::vector<int64_t>> batches;
  for (size_t start = 0; start < order.size(); start += size_t(batchSize))
    batches.emplace_back(order.begin() + start,
                         order.begin() +
                             std::min(order.size(), start + size_t(batchSize)));
  return batches;
}

/// Decodes the lines `idx` with sessions[0]'s model (or the ensemble of
/// all) into their slots of `out`, detokenised by sessions[0]; returns the
/// target words of their best translations, </s> included.
int64_t translateBatch(const std::vector<Session *> &sessions,
                       const std::vector<std::vector<int32_t>> &sources,
                       const std::vector<int64_t> &idx,
                       const DecodeOptions &options,
                       std::vector<std::vector<Translation>> &out) {
  const Session &first = *sessions.at(0);
  std::vector<TranslationModel *> models;
  for (Session *session : sessions)
    models.push_back(session->model.get());
  Batch batch = makeSourceBatch(sources, idx);
  auto result =
      searchBatch(models, batch, options.beam, 2 * first.options.maxLen + 10,
                  options.lengthPenalty)
          .nBest(options.nBest);
  int64_t words = 0;
  for (size_t k = 0; k < idx.size(); ++k)
    for (const Hypothesis &hyp : result[k]) {
      auto tokens = first.tgtVocab.decode(hyp.tokens);
      if (out[idx[k]].empty())
        words += int64_t(tokens.size()) + 1;
      out[idx[k]].push_back({first.codec.detokenized(tokens),
                             first.codec.tokenized(tokens), hyp.score});
    }
  return words;
}

} // namespace

std::vector<std::vector<Translation>>
translateLines(const std::vector<Session *> &sessions,
               const std::vector<std::string> &lines,
               const DecodeOptions &options, int64_t *wordsOut) {
  checkDecodeOptions(options);
  std::vector<std::vector<int32_t>> sources =
      encodeSources(*sessions.at(0), lines);
  std::vector<std::vector<Translation>> out(lines.size());
  int64_t words = 0;
  for (const std::vector<int64_t> &idx :
       lengthBatches(sources, options.batchSize))
    words += translateBatch(sessions, sources, idx, options, out);
  if (wordsOut)
    *wordsOut = words;
  return out;
}

int64_t workersSideBySide(int64_t workers, int64_t lines,
                          const DecodeOptions &options) {
  int64_t batches = (lines + options.batchSize - 1) / options.batchSize;
  return std::max<int64_t>(1, std::min(workers, batches));
}

std::vector<std::vector<Translation>>
translateLinesSideBySide(const std::vector<Session *> &sessions,
                         const SessionLoader &loadCopy, int64_t workers,
                         const std::vector<std::string> &lines,
                         const DecodeOptions &options, int64_t *wordsOut) {
  checkDecodeOptions(options);
  workers = workersSideBySide(workers, int64_t(lines.size()), options);
  if (workers < 2)
    return translateLines(sessions, lines, options, wordsOut);
  const std::vector<std::vector<int32_t>> sources =
      encodeSources(*sessions.at(0), lines);
  const std::vector<std::vector<int64_t>> batches =
      lengthBatches(sources, options.batchSize);
  std::vector<std::vector<Translation>> out(lines.size());
  std::atomic<size_t> next{0};
  std::vector<int64_t> words(static_cast<size_t>(workers), 0);
  std::vector<std::exception_ptr> failures(static_cast<size_t>(workers));
  // Each worker takes the next batch until none is left; a batch's lines
  // are its own slots of `out`. A failure stops the others' next takes.
  auto work = [&](int64_t worker, const std::vector<Session *> &own) {
    try {
      models::OneThreadHere alone;
      for (size_t b; (b = next.fetch_add(1)) < batches.size();)
        words[worker] += translateBatch(own, sources, batches[b], options, out);
    } catch (...) {
      failures[worker] = std::current_exception();
      next.store(batches.size());
    }
  };
  std::mutex loading;
  std::vector<std::thread> threads;
  for (int64_t worker = 1; worker < workers; ++worker)
    threads.emplace_back([&, worker] {
      std::vector<std::unique_ptr<Session>> copies;
      try {
        // One load at a time: a model of a cell file compiles it (JIT)
        // as it loads, and the copies' decoding need not wait for the
        // slowest load anyway.
        std::lock_guard<std::mutex> lock(loading);
        copies = loadCopy();
      } catch (...) {
        failures[worker] = std::current_exception();
        return;
      }
      std::vector<Session *> own;
      for (const auto &copy : copies)
        own.push_back(copy.get());
      work(worker, own);
    });
  work(0, sessions);
  for (std::thread &thread : threads)
    thread.join();
  for (const std::exception_ptr &failure : failures)
    if (failure)
      std::rethrow_exception(failure);
  if (wordsOut)
    *wordsOut = std::accumulate(words.begin(), words.end(), int64_t(0));
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
