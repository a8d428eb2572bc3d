//===- models/nmt/BeamSearch.cpp - Hypotheses of a beam search ------------===//

#include "models/nmt/BeamSearch.h"

#include "models/common/Data.h"
#include "models/common/Math.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace nmt {

namespace {
constexpr float MinusInf = -std::numeric_limits<float>::infinity();
} // namespace

namespace {

std::vector<int64_t> sentenceLimits(const models::Batch &batch,
                                    int64_t maxLength) {
  std::vector<int64_t> limits(batch.B);
  for (int64_t b = 0; b < batch.B; ++b)
    limits[b] = std::min<int64_t>(maxLength, 2 * batch.srcLen[b] + 10);
  return limits;
}

} // namespace

BeamSearch::BeamSearch(const models::Batch &batch, int64_t beam,
                       int64_t maxLength, float lengthPenalty)
    : BeamSearch(sentenceLimits(batch, maxLength), beam, lengthPenalty) {}

BeamSearch::BeamSearch(const std::vector<int64_t> &limits, int64_t beam,
                       float lengthPenalty)
    : B(int64_t(limits.size())), K(beam), lengthPenalty(lengthPenalty),
      limits(limits) {
  const int64_t count = B * K;
  for (Rows *table : {&rows, &next}) {
    table->parents.resize(count);
    table->previous.assign(count, models::Vocab::Bos);
    table->scores.assign(count, MinusInf);
    table->hypotheses.resize(count);
  }
  packedOf.resize(count);
  // Each sentence starts with one hypothesis, from its initial states.
  for (int64_t r = 0; r < count; ++r) {
    rows.parents[r] = int32_t(r / K);
    if (r % K == 0)
      rows.scores[r] = 0;
  }
  finished.resize(B);
  done.assign(B, false);
  for (int64_t limit : limits)
    longest = std::max(longest, limit);
}

bool BeamSearch::nextStep() {
  active.clear();
  activeParents.clear();
  activePrevious.clear();
  activeSentences.clear();
  if (step >= longest)
    return false;
  for (int64_t r = 0; r < B * K; ++r)
    if (!done[r / K] && rows.scores[r] != MinusInf) {
      packedOf[r] = int32_t(active.size());
      active.push_back(int32_t(r));
      activeParents.push_back(rows.parents[r]);
      activePrevious.push_back(rows.previous[r]);
      activeSentences.push_back(int32_t(r / K));
    }
  return !active.empty();
}

void BeamSearch::advance(const float *logProbs, int64_t vocab) {
  for (int64_t b = 0; b < B; ++b) {
    if (done[b]) {
      for (int64_t r = b * K; r < (b + 1) * K; ++r)
        clearNextRow(r);
      continue;
    }
    extend(b, collectCandidates(b, logProbs, vocab));
  }
  std::swap(rows, next);
  ++step;
}

/// Whether x is ranked above y: the heaps below keep the worst on top.
static bool better(const BeamSearch::Candidate &x,
                   const BeamSearch::Candidate &y) {
  return x.score > y.score;
}

/// The largest t with base + t <= worst in float arithmetic (within a few
/// ulps): a word whose log-probability is at most t cannot beat `worst`,
/// since float addition is monotone.
static float skipThreshold(float worst, float base) {
  float t = worst - base;
  while (base + t > worst)
    t = std::nextafter(t, -std::numeric_limits<float>::infinity());
  return t;
}

void BeamSearch::collectRowBest(int64_t r, const float *row, int64_t vocab) {
  const size_t wanted = size_t(2 * K);
  const float base = rows.scores[r];
  auto skipped = [](int64_t w) {
    return w == models::Vocab::Pad || w == models::Vocab::Bos;
  };
  rowBest.clear();
  int64_t w = 0;
  for (; w < vocab && rowBest.size() < wanted; ++w) {
    if (skipped(w))
      continue;
    rowBest.push_back({base + row[w], int32_t(r), int32_t(w)});
    std::push_heap(rowBest.begin(), rowBest.end(), better);
  }
  if (rowBest.size() < wanted)
    return;
  // The heap sees exactly the words the full scan would have let in (a
  // word at or below the threshold would fail the comparison), so the
  // result is the same; most of the row is skipped 16 words at a time.
  float threshold = skipThreshold(rowBest.front().score, base);
  for (w = models::firstAbove(row, w, vocab, threshold); w < vocab;
       w = models::firstAbove(row, w + 1, vocab, threshold)) {
    Candidate candidate{base + row[w], int32_t(r), int32_t(w)};
    if (skipped(w) || !(candidate.score > rowBest.front().score))
      continue;
    std::pop_heap(rowBest.begin(), rowBest.end(), better);
    rowBest.back() = candidate;
    std::push_heap(rowBest.begin(), rowBest.end(), better);
    threshold = skipThreshold(rowBest.front().score, base);
  }
}

size_t BeamSearch::collectCandidates(int64_t b, const float *logProbs,
                                     int64_t vocab) {
  // Each row's own best 2K first, so only K*2K candidates are sorted.
  const size_t wanted = size_t(2 * K);
  candidates.clear();
  for (int64_t r = b * K; r < (b + 1) * K; ++r) {
    if (rows.scores[r] == MinusInf)
      continue;
    collectRowBest(r, logProbs + int64_t(packedOf[r]) * vocab, vocab);
    candidates.insert(candidates.end(), rowBest.begin(), rowBest.end());
  }
  size_t keep = std::min(candidates.size(), wanted);
  std::partial_sort(candidates.begin(), candidates.begin() + keep,
                    candidates.end(), better);
  return keep;
}

void BeamSearch::extend(int64_t b, size_t candidateCount) {
  const int64_t first = b * K;
  int64_t live = 0;
  for (size_t c = 0; c < candidateCount && live < K; ++c) {
    const Candidate &candidate = candidates[c];
    const std::vector<int32_t> &tokens = rows.hypotheses[candidate.row];
    if (candidate.word == models::Vocab::Eos) {
      finished[b].push_back(
          {normalised(candidate.score, tokens.size() + 1), tokens});
      continue;
    }
    int64_t r = first + live++;
    next.parents[r] = packedOf[candidate.row];
    next.previous[r] = candidate.word;
    next.scores[r] = candidate.score;
    next.hypotheses[r] = tokens;
    next.hypotheses[r].push_back(candidate.word);
  }
  for (int64_t r = first + live; r < first + K; ++r)
    clearNextRow(r);
  bool last = step + 1 >= limits[b];
  if (last)
    for (int64_t r = first; r < first + live; ++r)
      finished[b].push_back(
          {normalised(next.scores[r], next.hypotheses[r].size()),
           next.hypotheses[r]});
  if (last || int64_t(finished[b].size()) >= K || live == 0)
    done[b] = true;
}

void BeamSearch::clearNextRow(int64_t r) {
  next.parents[r] = 0;
  next.previous[r] = models::Vocab::Eos;
  next.scores[r] = MinusInf;
  next.hypotheses[r].clear();
}

double BeamSearch::normalised(double score, size_t length) const {
  return score / std::pow(double(length), double(lengthPenalty));
}

std::vector<std::vector<int32_t>>
BeamSearch::best(std::vector<double> *scores) const {
  std::vector<std::vector<int32_t>> result(B);
  if (scores)
    scores->assign(B, -std::numeric_limits<double>::infinity());
  for (int64_t b = 0; b < B; ++b) {
    double bestScore = -std::numeric_limits<double>::infinity();
    for (const Finished &f : finished[b])
      if (f.score > bestScore) {
        bestScore = f.score;
        result[b] = f.tokens;
      }
    if (scores)
      (*scores)[b] = bestScore;
  }
  return result;
}

std::vector<std::vector<Hypothesis>> BeamSearch::nBest(int64_t n) const {
  std::vector<std::vector<Hypothesis>> result(B);
  for (int64_t b = 0; b < B; ++b) {
    result[b] = finished[b];
    std::stable_sort(result[b].begin(), result[b].end(),
                     [](const Hypothesis &x, const Hypothesis &y) {
                       return x.score > y.score;
                     });
    if (int64_t(result[b].size()) > n)
      result[b].resize(size_t(n));
  }
  return result;
}

} // namespace nmt
