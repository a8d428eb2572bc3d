//===- EmbeddingTest.cpp - Embedding lookups and pretrained vectors -------===//

#include "models/common/Embedding.h"

#include "models/common/Data.h"

#include "LayerCheck.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace models;
using namespace layercheck;

namespace {

TEST(Embedding, MatchesTorchAndDifferences) {
  ParamStore store;
  Embedding layer(store, "emb", 7, 3);
  Rng rng(5);
  uniformInit(layer.weights().value, 1.f, rng);
  std::vector<int32_t> ids = {3, 0, 3, 6, 1};
  int64_t n = int64_t(ids.size());
  std::vector<float> rows(n * 3), G = randomValues(n * 3, rng);
  layer.forward(ids.data(), n, rows.data());
  layer.backward(ids.data(), n, G.data());

  torch::Tensor table = toTorch(layer.weights().value, {7, 3}, true);
  torch::Tensor index =
      torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()));
  torch::Tensor out = torch::embedding(table, index);
  (out * toTorch(G, {n, 3})).sum().backward();
  expectClose(rows, out, "rows");
  expectClose(layer.weights().grad, table.grad(), "dTable");

  auto loss = [&] {
    layer.forward(ids.data(), n, rows.data());
    return weightedSum(rows, G);
  };
  std::vector<float> grad = layer.weights().grad;
  expectFiniteDifferences(loss, layer.weights().value, grad, "dTable");
}

TEST(Embedding, FrozenTableGetsNoGradientAndBadIdsThrow) {
  ParamStore store;
  Embedding layer(store, "emb", 4, 2);
  layer.setFrozen(true);
  std::vector<int32_t> ids = {1};
  std::vector<float> dRows = {1, 1};
  layer.backward(ids.data(), 1, dRows.data());
  EXPECT_EQ(layer.weights().grad, std::vector<float>(8, 0.f));
  EXPECT_TRUE(store.trainable().empty());
  std::vector<int32_t> bad = {4};
  std::vector<float> rows(2);
  EXPECT_THROW(layer.forward(bad.data(), 1, rows.data()), std::out_of_range);
}

/// A file under /tmp with the text, removed at the end of the test.
class TempFile {
public:
  explicit TempFile(const std::string &text) {
    char name[] = "/tmp/cellc-embedding-XXXXXX";
    int fd = mkstemp(name);
    EXPECT_GE(fd, 0);
    close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

TEST(Embedding, LoadsGloveAndWord2VecWithCoverage) {
  ParamStore store;
  Embedding layer(store, "emb", 5, 2);
  layer.weights().value.assign(10, 9.f);
  std::vector<std::string> tokens = {"<pad>", "The", "cat", "dog", "sat"};
  TempFile glove("the 1 2\ncat 3 4\nCat 5 6\nsat 7 8\r\n");
  EmbeddingCoverage coverage = layer.loadPretrained(glove.path, tokens, 1);
  EXPECT_EQ(coverage.tokens, 4);
  EXPECT_EQ(coverage.exact, 2);      // cat, sat
  EXPECT_EQ(coverage.lowercased, 1); // The -> the
  EXPECT_EQ(coverage.fileVectors, 4);
  EXPECT_EQ(layer.weights().value,
            (std::vector<float>{9, 9, 1, 2, 3, 4, 9, 9, 7, 8}));
  EXPECT_NE(coverage.describe(glove.path).find("3 of 4 tokens (75.0%)"),
            std::string::npos)
      << coverage.describe(glove.path);

  TempFile word2vec("2 2\ndog 0.5 -0.5\nThe 1.5 2.5\n");
  coverage = layer.loadPretrained(word2vec.path, tokens, 1);
  EXPECT_EQ(coverage.exact, 2);
  EXPECT_EQ(layer.weights().value[2], 1.5f);
  EXPECT_EQ(layer.weights().value[6], 0.5f);
}

std::string loadError(const std::string &text) {
  ParamStore store;
  Embedding layer(store, "emb", 2, 3);
  TempFile file(text);
  try {
    layer.loadPretrained(file.path, {"a", "b"});
  } catch (const DataError &error) {
    std::string message = error.what();
    return message.substr(message.find(':') + 1); // without the temp name
  }
  return "no error";
}

TEST(Embedding, MalformedFilesNameTheLine) {
  EXPECT_EQ(loadError("a 1 2 3\nb 1 2\n"), "2: 2 values, but the embedding has 3");
  EXPECT_EQ(loadError("a 1 2 3\nb 1 x 3\n"), "2: expected a word and its values");
  EXPECT_EQ(loadError("novalues\n"), "1: expected a word and its values");
  ParamStore store;
  Embedding layer(store, "emb", 2, 3);
  EXPECT_THROW(layer.loadPretrained("/nonexistent/glove.txt", {"a"}), DataError);
}

TEST(Embedding, SharedGloveSampleCoversCommonWords) {
  const std::string path = CELLC_SHARED_DATA "/embeddings/glove.6B.100d.sample.txt";
  if (!std::ifstream(path))
    GTEST_SKIP() << path << " is absent";
  ParamStore store;
  Embedding layer(store, "emb", 5, 100);
  std::vector<std::string> tokens = {"<pad>", "The", "of", "zyzzyva", "."};
  EmbeddingCoverage coverage = layer.loadPretrained(path, tokens, 1);
  EXPECT_EQ(coverage.fileVectors, 100);
  EXPECT_EQ(coverage.exact, 2);      // "of", "."
  EXPECT_EQ(coverage.lowercased, 1); // "The"
  EXPECT_FLOAT_EQ(layer.weights().value[100], -0.038194f); // the[0]
}

} // namespace
