//===- models/nmt/Translator.h - Translating raw lines ----------*- C++ -*-===//
//
// Raw lines in, translations out: tokenised and encoded by the first
// session's codec and vocabulary, decoded in batches of similar lengths by
// one model or an ensemble (Ensemble.h), each line's n best hypotheses
// detokenised.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_NMT_TRANSLATOR_H
#define CELLC_MODELS_NMT_TRANSLATOR_H

#include "models/nmt/Trainer.h"

#include <string>
#include <vector>

namespace nmt {

struct DecodeOptions {
  int64_t beam = 5, batchSize = 32, nBest = 1;
  float lengthPenalty = 1.0f;
};

/// One hypothesis of a line: the output text, its tokenised form and its
/// score (log-probability / length^lengthPenalty).
struct Translation {
  std::string text, tokenized;
  double score = 0;
};

/// Each line's options.nBest best translations (fewer if the beam finished
/// fewer), best first, by sessions[0]'s model or, given more sessions, by
/// the ensemble of their models (checkEnsemble them first). `wordsOut`
/// gets the target words of the best translations, </s> included.
std::vector<std::vector<Translation>>
translateLines(const std::vector<Session *> &sessions,
               const std::vector<std::string> &lines,
               const DecodeOptions &options, int64_t *wordsOut = nullptr);

/// How many threads translateLinesSideBySide decodes `lines` lines with:
/// `workers`, but no more than there are batches.
int64_t workersSideBySide(int64_t workers, int64_t lines,
                          const DecodeOptions &options);

/// translateLines with its batches decoded side by side by `workers`
/// threads, each on one core (cellrt::KernelsOnThisThread) with its own
/// copy of the sessions (Session::copy; the compiled cells are shared):
/// `sessions` on the calling thread. The translations are translateLines'
/// at one thread, bit for bit, whichever worker decodes a batch; with
/// fewer than two batches (or workers) it is translateLines, products
/// split across the threads. `workersOut` gets the threads that decoded
/// (fewer where the system gave no more). On 2 cores side by side decodes
/// 1.03-1.23x faster than the products split (models/nmt/README.md,
/// "Decoding side by side").
std::vector<std::vector<Translation>> translateLinesSideBySide(
    const std::vector<Session *> &sessions, int64_t workers,
    const std::vector<std::string> &lines, const DecodeOptions &options,
    int64_t *wordsOut = nullptr, int64_t *workersOut = nullptr);

/// Throws DataError naming `path` unless `other` (read from `path`) reads
/// and writes `first`'s tokens: the same codec, subword models and source
/// and target vocabularies (`firstPath` names `first`).
void checkSameVocabularies(const Session &first, const std::string &firstPath,
                           const Session &other, const std::string &path);

/// checkSameVocabularies, then the same model: architecture options and
/// every parameter's name and shape (checkpoint averaging).
void checkSameModel(const Session &first, const std::string &firstPath,
                    const Session &other, const std::string &path);

} // namespace nmt

#endif
