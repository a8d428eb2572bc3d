//===- models/nmt/Numbers.cpp - The embedded default task ----------------===//

#include "models/nmt/Numbers.h"

#include "models/common/Data.h"
#include "models/common/Math.h"

#include <set>

namespace nmt {
using namespace models;

namespace {
const char *const enOnes[] = {
    "zero",    "one",     "two",       "three",    "four",
    "five",    "six",     "seven",     "eight",    "nine",
    "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
    "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
const char *const enTens[] = {"",      "",      "twenty",  "thirty", "forty",
                              "fifty", "sixty", "seventy", "eighty", "ninety"};
const char *const deOnes[] = {
    "null",     "eins",      "zwei",     "drei",     "vier",
    "fünf",     "sechs",     "sieben",   "acht",     "neun",
    "zehn",     "elf",       "zwölf",    "dreizehn", "vierzehn",
    "fünfzehn", "sechzehn",  "siebzehn", "achtzehn", "neunzehn"};
const char *const deTens[] = {"",        "",        "zwanzig", "dreißig",
                              "vierzig", "fünfzig", "sechzig", "siebzig",
                              "achtzig", "neunzig"};

std::string englishBelowThousand(int64_t n) {
  std::string text;
  if (n >= 100) {
    text = std::string(enOnes[n / 100]) + " hundred";
    n %= 100;
    if (n)
      text += " ";
  }
  if (n >= 20) {
    text += enTens[n / 10];
    if (n % 10)
      text += std::string("-") + enOnes[n % 10];
  } else if (n) {
    text += enOnes[n];
  }
  return text;
}

/// Words of 1..999; `compound`: the number is followed by "tausend", so a
/// final "eins" is "ein".
void germanBelowThousand(int64_t n, bool compound,
                         std::vector<std::string> &out) {
  if (n >= 100) {
    out.push_back(n / 100 == 1 ? "ein" : deOnes[n / 100]);
    out.push_back("hundert");
    n %= 100;
  }
  if (n >= 20) {
    if (n % 10) {
      out.push_back(n % 10 == 1 ? "ein" : deOnes[n % 10]);
      out.push_back("und");
    }
    out.push_back(deTens[n / 10]);
  } else if (n) {
    out.push_back(n == 1 && compound ? "ein" : deOnes[n]);
  }
}
} // namespace

std::string englishNumber(int64_t n) {
  if (n <= 0 || n > 999999)
    throw DataError("englishNumber: out of range");
  std::string text;
  if (n >= 1000) {
    text = englishBelowThousand(n / 1000) + " thousand";
    if (n % 1000)
      text += " ";
  }
  return text + englishBelowThousand(n % 1000);
}

std::vector<std::string> germanNumberTokens(int64_t n) {
  if (n <= 0 || n > 999999)
    throw DataError("germanNumberTokens: out of range");
  std::vector<std::string> out;
  if (n >= 1000) {
    germanBelowThousand(n / 1000, true, out);
    out.push_back("tausend");
  }
  germanBelowThousand(n % 1000, false, out);
  return out;
}

std::vector<std::string> tokenizeEnglishNumber(const std::string &text) {
  std::vector<std::string> tokens;
  for (const std::string &word : splitWhitespace(text)) {
    size_t start = 0;
    while (true) {
      size_t dash = word.find('-', start);
      std::string piece = word.substr(start, dash - start);
      if (!piece.empty())
        tokens.push_back(piece);
      if (dash == std::string::npos)
        break;
      tokens.push_back("-");
      start = dash + 1;
    }
  }
  return tokens;
}

NumbersTask makeNumbersTask(uint64_t seed, int64_t trainSize,
                            int64_t validSize, int64_t testSize,
                            int64_t maxNumber) {
  if (maxNumber < 1 || maxNumber > 999999)
    throw DataError("numbers task: the largest number must be in 1..999999");
  if (trainSize + validSize + testSize > maxNumber)
    throw DataError("numbers task: more sentences than distinct numbers");
  Rng rng(seed);
  int64_t digits = 1;
  for (int64_t x = maxNumber; x >= 10; x /= 10)
    ++digits;
  std::set<int64_t> used;
  auto draw = [&]() {
    for (int attempt = 0; attempt < 50; ++attempt) {
      int64_t d = 1 + int64_t(rng.below(uint64_t(digits)));
      int64_t low = 1, high = 9;
      for (int64_t k = 1; k < d; ++k)
        low *= 10, high = high * 10 + 9;
      high = std::min(high, maxNumber);
      if (low > high)
        continue;
      int64_t n = low + int64_t(rng.below(uint64_t(high - low + 1)));
      if (used.insert(n).second)
        return n;
    }
    while (true) {
      int64_t n = 1 + int64_t(rng.below(uint64_t(maxNumber)));
      if (used.insert(n).second)
        return n;
    }
  };
  auto fill = [&](TextSplit &split, int64_t size) {
    for (int64_t i = 0; i < size; ++i) {
      int64_t n = draw();
      split.src.push_back(joinTokens(tokenizeEnglishNumber(englishNumber(n))));
      split.tgt.push_back(joinTokens(germanNumberTokens(n)));
    }
  };
  NumbersTask task;
  fill(task.test, testSize);
  fill(task.valid, validSize);
  fill(task.train, trainSize);
  return task;
}

} // namespace nmt
