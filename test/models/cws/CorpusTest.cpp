//===- CorpusTest.cpp - Characters, tags and the three corpus formats -----===//

#include "models/cws/Batch.h"
#include "models/cws/Corpus.h"
#include "models/cws/Lexicon.h"
#include "models/cws/Text.h"
#include "TestFiles.h"

using namespace cws;
using namespace cws::test;

namespace {

using Strings = std::vector<std::string>;

TEST(Text, SplitsCodePoints) {
  EXPECT_EQ(splitChars("a中，𠀀1"), (Strings{"a", "中", "，", "𠀀", "1"}));
  EXPECT_EQ(splitWords("共同  创造\t美好　的 "),
            (Strings{"共同", "创造", "美好", "的"}));
}

TEST(Text, NormalisesAsThePkuTrainingFile) {
  EXPECT_EQ(normalizeChar("１"), "0");
  EXPECT_EQ(normalizeChar("7"), "0");
  EXPECT_EQ(normalizeChar("Ａ"), "A");
  EXPECT_EQ(normalizeChar("，"), ",");
  EXPECT_EQ(normalizeChar("～"), "~");
  // Chinese numerals and the ideographic zero are words' characters.
  EXPECT_EQ(normalizeChar("○"), "○");
  EXPECT_EQ(normalizeChar("二"), "二");
  EXPECT_EQ(normalizeChar("x"), "x");
}

TEST(Corpus, TagsWords) {
  Sentence s = tagWords({"共同", "的", "新世纪"});
  EXPECT_EQ(s.chars, (Strings{"共", "同", "的", "新", "世", "纪"}));
  EXPECT_EQ(s.tags, (std::vector<int32_t>{B, E, S, B, M, E}));
  EXPECT_EQ(wordsFromTags(s.chars, s.tags),
            (Strings{"共同", "的", "新世纪"}));
}

TEST(Corpus, IllFormedTagsStillSegment) {
  Strings chars = {"a", "b", "c", "d"};
  EXPECT_EQ(wordsFromTags(chars, {B, B, M, M}), (Strings{"a", "bcd"}));
  EXPECT_EQ(wordsFromTags(chars, {M, E, S, E}), (Strings{"ab", "c", "d"}));
  EXPECT_EQ(wordsFromTags(chars, {M, M, M, M}), (Strings{"abcd"}));
  EXPECT_EQ(joinWords({"共同", "的"}), "共同  的");
}

TEST(Corpus, ReadsSegmentedCrlf) {
  auto path = writeFile("seg.utf8", "共同  创造  \r\n美好  的\r\n\r\n");
  auto sentences = readGold(path);
  ASSERT_EQ(sentences.size(), 2u);
  EXPECT_EQ(sentences[0].tags, (std::vector<int32_t>{B, E, B, E}));
  EXPECT_EQ(sentences[1].chars, (Strings{"美", "好", "的"}));
}

TEST(Corpus, SegmentedErrorsNameTheLine) {
  auto empty = writeFile("gap.utf8", "共同  创造\r\n\r\n美好\r\n");
  EXPECT_NE(errorOf([&] { readGold(empty); })
                .find(empty + ":2: empty line"),
            std::string::npos);
  auto bad = writeFile("bad.utf8", "共同\n美\xE5\xA5\n");
  EXPECT_NE(errorOf([&] { readGold(bad); }).find(bad + ":2: invalid UTF-8"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { readGold(bad, Format::Raw); }).find("raw text"),
            std::string::npos);
}

const char *conllu = "# sent_id = 1\n"
                     "1\t同样\t_\tADV\tRB\t_\t2\tadvmod\t_\t_\n"
                     "2-3\t施力\t_\t_\t_\t_\t_\t_\t_\t_\n"
                     "2\t施\t_\tVERB\tVV\t_\t0\troot\t_\t_\n"
                     "3\t力\t_\tNOUN\tNN\t_\t2\tobj\t_\t_\n"
                     "\n"
                     "1\t好\t_\tADJ\tJJ\t_\t0\troot\t_\t_\n";

TEST(Corpus, ReadsConllu) {
  auto path = writeFile("ok.conll", conllu);
  auto sentences = readGold(path);
  ASSERT_EQ(sentences.size(), 2u);
  EXPECT_EQ(sentences[0].chars, (Strings{"同", "样", "施", "力"}));
  EXPECT_EQ(sentences[0].tags, (std::vector<int32_t>{B, E, S, S}));
  EXPECT_EQ(sentences[1].tags, (std::vector<int32_t>{S}));
  EXPECT_EQ(readWords(path), (Strings{"同样", "施", "力", "好"}));
  // The format follows the extension unless it is given.
  EXPECT_EQ(resolveFormat(Format::Auto, "x.conllu", Format::Raw),
            Format::Conllu);
  EXPECT_EQ(resolveFormat(Format::Auto, "x.utf8", Format::Raw), Format::Raw);
}

TEST(Corpus, ConlluErrorsNameTheLine) {
  auto columns = writeFile("cols.conll", "1\t好\t_\tADJ\n");
  EXPECT_NE(errorOf([&] { readGold(columns); })
                .find(columns + ":1: 4 tab-separated columns, CoNLL-U has 10"),
            std::string::npos);
  auto blank = writeFile("blank.conll",
                         "1\t好\t_\t_\t_\t_\t_\t_\t_\t_\n\n\n1\t好\t_\t_\t_"
                         "\t_\t_\t_\t_\t_\n");
  EXPECT_NE(errorOf([&] { readGold(blank); }).find(blank + ":3: blank line"),
            std::string::npos);
  auto space = writeFile("space.conll", "1\t好 的\t_\t_\t_\t_\t_\t_\t_\t_\n");
  EXPECT_NE(errorOf([&] { readGold(space); }).find(space + ":1: the word"),
            std::string::npos);
}

TEST(Corpus, RawTextKeepsSpacesAsBoundaries) {
  auto path = writeFile("raw.txt", "中国 人民\r\n\r\n好\n");
  auto sentences = readToSegment(path);
  ASSERT_EQ(sentences.size(), 3u);
  EXPECT_EQ(sentences[0].chars, (Strings{"中", "国", "人", "民"}));
  EXPECT_EQ(sentences[0].spaceBefore, (std::vector<uint8_t>{0, 0, 1, 0}));
  EXPECT_TRUE(sentences[1].chars.empty());
  EXPECT_TRUE(sentences[0].tags.empty());
  // A CoNLL-U file gives its sentences' characters.
  auto conll = writeFile("in.conll", conllu);
  EXPECT_EQ(readToSegment(conll)[0].chars.size(), 4u);
}

TEST(Lexicon, MarksWordsEndingAndStartingAtEachCharacter) {
  // Single characters and words longer than MaxLength give no feature;
  // words match in the model's normalised form (１９ == 00).
  Lexicon lexicon({"中国", "中国人", "人民", "好", "１９年", "一二三四五六"});
  EXPECT_EQ(lexicon.words().size(), 4u);
  auto f = lexicon.features({"中", "国", "人", "民"});
  ASSERT_EQ(f.size(), size_t(4 * Lexicon::Width));
  auto at = [&](int i, bool ends, int length) {
    return f[i * Lexicon::Width + (ends ? 0 : Lexicon::MaxLength - 1) +
             length - 2];
  };
  EXPECT_EQ(at(0, false, 2), 1.f); // 中国 starts
  EXPECT_EQ(at(0, false, 3), 1.f); // 中国人 starts
  EXPECT_EQ(at(1, true, 2), 1.f);  // 中国 ends
  EXPECT_EQ(at(2, true, 3), 1.f);  // 中国人 ends
  EXPECT_EQ(at(2, false, 2), 1.f); // 人民 starts
  EXPECT_EQ(at(3, true, 2), 1.f);  // 人民 ends
  float total = 0;
  for (float x : f)
    total += x;
  EXPECT_EQ(total, 6.f);
  EXPECT_EQ(lexicon.features({"0", "0", "年"})[2 * Lexicon::Width + 1], 1.f);
}

TEST(Lexicon, TrainingCanHideListedGoldWords) {
  Lexicon lexicon({"中国", "人民", "国人"});
  Sentence s = tagWords({"中国", "人民"});
  Vocab vocab = buildCharVocab({s}, 1);
  std::vector<Encoded> encoded = {encode(s, vocab, lexicon)};
  // 中国 and 人民 are listed gold words; 国人 is listed but not gold.
  ASSERT_EQ(encoded[0].listedWords.size(), 2u);
  auto sum = [](const CharBatch &batch) {
    float total = 0;
    for (float x : batch.features)
      total += x;
    return total;
  };
  CharBatch batch = makeCharBatch(encoded, {0});
  EXPECT_EQ(batch.featureWidth, Lexicon::Width);
  EXPECT_EQ(sum(batch), 6.f);
  Rng rng(1);
  dropListedWords(batch, encoded, {0}, 0.f, rng);
  EXPECT_EQ(sum(batch), 6.f);
  dropListedWords(batch, encoded, {0}, 1.f, rng);
  EXPECT_EQ(sum(batch), 2.f); // only 国人's two features are left
}

TEST(Corpus, WordListsMayHaveBlankLines) {
  auto path = writeFile("words.utf8", "中国\n\n人民\r\n");
  EXPECT_EQ(readWords(path), (Strings{"中国", "人民"}));
}

} // namespace
