//===- models/fuzz/DataFuzz.cpp - libFuzzer target: the drivers' readers --===//
//
// Every file the drivers read from a user goes through one of these
// readers; each must end in a models::DataError naming the file (or read
// the file), whatever its bytes: no crash, no sanitizer report, no other
// exception, no hang. The first byte picks the reader, the rest is the
// file. Built with -DCELLC_FUZZ=ON; scripts/fuzz.sh runs it.
//
//===----------------------------------------------------------------------===//

#include "models/common/Data.h"
#include "models/common/Embedding.h"
#include "models/cws/Corpus.h"
#include "models/nli/Corpus.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace {

/// A file of this process holding `bytes`, rewritten for each input.
class InputFile {
public:
  explicit InputFile(const std::string &suffix) {
    char name[] = "/tmp/data-fuzz-XXXXXX";
    int fd = ::mkstemp(name);
    ::close(fd);
    ::unlink(name);
    path = std::string(name) + suffix;
  }
  ~InputFile() { ::unlink(path.c_str()); }
  const std::string &write(const uint8_t *data, size_t size) {
    FILE *file = std::fopen(path.c_str(), "wb");
    std::fwrite(data, 1, size, file);
    std::fclose(file);
    return path;
  }
  std::string path;
};

void readWith(uint8_t reader, const uint8_t *data, size_t size) {
  static InputFile text(".txt"), conllu(".conllu"), tsv(".tsv");
  switch (reader % 8) {
  case 0: {
    std::vector<std::string> src, tgt;
    const std::string &path = text.write(data, size);
    models::readParallel(path, path, src, tgt);
    return;
  }
  case 1:
    cws::readGold(text.write(data, size), cws::Format::Segmented);
    return;
  case 2:
    cws::readGold(conllu.write(data, size), cws::Format::Auto);
    return;
  case 3:
    cws::readToSegment(text.write(data, size), cws::Format::Raw);
    return;
  case 4:
    cws::readWords(conllu.write(data, size), cws::Format::Auto);
    return;
  case 5: {
    // A SICK split: DIR/NAME.tsv for the split DIR/NAME.
    const std::string &path = tsv.write(data, size);
    nli::readSplit(path.substr(0, path.size() - 4), true);
    return;
  }
  case 6:
    nli::readUnlabelled(text.write(data, size), false);
    return;
  default: {
    models::ParamStore store;
    models::Embedding table(store, "fuzz", 6, 4);
    table.loadPretrained(text.write(data, size),
                         {"<pad>", "the", "a", "The", "cat", "dog"}, 1);
    return;
  }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  try {
    readWith(data[0], data + 1, size - 1);
  } catch (const models::DataError &) {
    // The reader's message for a bad file: what it must do.
  }
  return 0;
}
