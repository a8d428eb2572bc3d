//===- models/nmt/Translator.cpp - Translating raw lines ------------------===//

#include "models/nmt/Translator.h"

#include "models/nmt/Ensemble.h"

#include "cellrt/ThisThread.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <numeric>
#include <system_error>
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

/// Runs work(0) on the calling thread and work(1) ... work(workers - 1)
/// on threads of their own, all at once, and returns how many ran: where
/// the system gives no more threads, the ones started (`work` must take
/// what is left then). `work` must not throw.
int64_t runSideBySide(int64_t workers,
                      const std::function<void(int64_t)> &work) {
  std::vector<std::thread> threads;
  threads.reserve(size_t(std::max<int64_t>(workers - 1, 0)));
  for (int64_t worker = 1; worker < workers; ++worker) {
    try {
      threads.emplace_back(work, worker);
    } catch (const std::system_error &) {
      break;
    }
  }
  work(0);
  for (std::thread &thread : threads)
    thread.join();
  return int64_t(threads.size()) + 1;
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
                         int64_t workers, const std::vector<std::string> &lines,
                         const DecodeOptions &options, int64_t *wordsOut,
                         int64_t *workersOut) {
  checkDecodeOptions(options);
  workers = workersSideBySide(workers, int64_t(lines.size()), options);
  if (workersOut)
    *workersOut = workers;
  if (workers < 2)
    return translateLines(sessions, lines, options, wordsOut);
  const std::vector<std::vector<int32_t>> sources =
      encodeSources(*sessions.at(0), lines);
  const std::vector<std::vector<int64_t>> batches =
      lengthBatches(sources, options.batchSize);
  // Each worker makes its own copies while the calling thread already
  // decodes: a copy is built in its session's product precision and each
  // model decodes in its own (ThreadProductPrecision), whatever the
  // process's setting, which building a copy changes.
  const size_t count = static_cast<size_t>(workers);
  std::vector<std::vector<std::unique_ptr<Session>>> copies(count);
  std::vector<std::vector<Session *>> own(count, sessions);
  auto makeCopies = [&](size_t worker) {
    own[worker].clear();
    for (const Session *session : sessions) {
      copies[worker].push_back(session->copy());
      own[worker].push_back(copies[worker].back().get());
    }
  };
  std::vector<std::vector<Translation>> out(lines.size());
  std::atomic<size_t> next{0};
  std::vector<int64_t> words(count, 0);
  std::vector<std::exception_ptr> failures(count);
  // Each worker takes the next batch, the longest first (the last ones
  // then leave no thread waiting long), until none is left; a batch's
  // lines are its own slots of `out`. A failure stops the others' takes.
  auto work = [&](int64_t worker) {
    try {
      cellrt::KernelsOnThisThread alone;
      if (worker > 0)
        makeCopies(size_t(worker));
      for (size_t taken; (taken = next.fetch_add(1)) < batches.size();)
        words[worker] +=
            translateBatch(own[worker], sources,
                           batches[batches.size() - 1 - taken], options, out);
    } catch (...) {
      failures[worker] = std::current_exception();
      next.store(batches.size());
    }
  };
  const int64_t ran = runSideBySide(workers, work);
  for (const std::exception_ptr &failure : failures)
    if (failure)
      std::rethrow_exception(failure);
  if (wordsOut)
    *wordsOut = std::accumulate(words.begin(), words.end(), int64_t(0));
  if (workersOut)
    *workersOut = ran;
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
