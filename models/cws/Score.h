//===- models/cws/Score.h - The SIGHAN bakeoff word scores ------*- C++ -*-===//
//
// The numbers of the bakeoff's `score` script: per line, the gold and test
// words are aligned as `diff` aligns two files of one word per line (a
// longest common subsequence of words); a gold word is recalled when the
// alignment keeps it, a test word is precise when it is kept. Recall and
// precision are over all words of all lines, F1 their harmonic mean; a gold
// word is out of vocabulary (OOV) when the training word list lacks it.
// Lines whose gold has no word are skipped, as the script skips them.
//
//===----------------------------------------------------------------------===//

#ifndef CELLC_MODELS_CWS_SCORE_H
#define CELLC_MODELS_CWS_SCORE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace cws {

struct ScoreCounts {
  int64_t goldWords = 0, testWords = 0, correct = 0;
  /// diff's edits: a gap of g gold and t test words between two kept words
  /// is min(g, t) substitutions plus the rest as deletions or insertions.
  int64_t insertions = 0, deletions = 0, substitutions = 0;
  int64_t oov = 0, oovRecalled = 0, ivRecalled = 0;

  double recall() const;
  double precision() const;
  double f1() const;
  double oovRate() const;
  /// NaN when there is no OOV (or no IV) gold word.
  double oovRecall() const;
  double ivRecall() const;
  void add(const ScoreCounts &other);
};

using WordSet = std::unordered_set<std::string>;

/// The counts of one line's words. Memory is linear in the line's length
/// (a long line is aligned by Hirschberg's recursion).
ScoreCounts scoreLine(const std::vector<std::string> &gold,
                      const std::vector<std::string> &test,
                      const WordSet &vocabulary);
/// The same, aligning with a full table only up to `denseCells` cells
/// ((gold words + 1) x (test words + 1)); tests compare both ways.
ScoreCounts scoreLine(const std::vector<std::string> &gold,
                      const std::vector<std::string> &test,
                      const WordSet &vocabulary, size_t denseCells);

/// The counts of whole files, line by line. DataError naming the line when
/// the files have different numbers of lines (blank lines at the end do not
/// count) or a line's characters differ between them (misaligned files).
ScoreCounts scoreLines(const std::vector<std::string> &gold,
                       const std::vector<std::string> &test,
                       const WordSet &vocabulary, const std::string &goldName,
                       const std::string &testName);

/// The script's summary lines (`=== F MEASURE:\t0.869`), with three
/// decimals as the script prints them, or `digits`.
std::string formatScore(const ScoreCounts &counts, int digits = 3);

} // namespace cws

#endif
