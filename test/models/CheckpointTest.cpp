//===- CheckpointTest.cpp - Damaged checkpoints, failed saves, NaNs -------===//

#include "models/nmt/Trainer.h"

#include "models/common/CheckpointFile.h"
#include "test/models/TinyRun.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace nmt;

namespace {

[[maybe_unused]] const bool singleThreaded = setThreads(1);

TrainOptions tiny(const std::string &name) {
  return test::tinyRun("checkpoint-" + name, "atr");
}

using test::bytesOf;

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// The message Session::load(path) fails with ("" if it loads).
std::string loadError(const std::string &path) {
  try {
    Session::load(path);
    return "";
  } catch (const DataError &error) {
    return error.what();
  }
}

#define EXPECT_CONTAINS(text, part)                                            \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << (text)

/// A saved, untrained session and its bytes.
struct Saved {
  TrainOptions options;
  TrainData data;
  std::unique_ptr<Session> session;
  std::string bytes;
  explicit Saved(const std::string &name) : options(tiny(name)) {
    data = loadTrainData(options);
    session = std::make_unique<Session>(options, data);
    session->save(options.out);
    bytes = bytesOf(options.out);
  }
};

} // namespace

// 64 flipped bytes in a weight matrix used to load and translate garbage.
TEST(Checkpoint, FlippedTruncatedEmptyOrForeignFilesAreNamedErrors) {
  Saved saved("damaged");
  const std::string &path = saved.options.out;
  std::string flipped = saved.bytes;
  for (size_t i = 0; i < 64; ++i)
    flipped[flipped.size() / 2 + i] ^= 0x40;
  writeBytes(path, flipped);
  EXPECT_CONTAINS(loadError(path), path + ": checksum mismatch");
  writeBytes(path, saved.bytes.substr(0, saved.bytes.size() - 100));
  EXPECT_CONTAINS(loadError(path), path + ": truncated");
  writeBytes(path, "");
  EXPECT_CONTAINS(loadError(path), path + ": empty file, not an nmt");
  writeBytes(path, "hello, world\nnot a checkpoint at all\n");
  EXPECT_CONTAINS(loadError(path), path + ": not an nmt checkpoint");
  writeBytes(path, saved.bytes);
  EXPECT_EQ(loadError(path), "");
}

// Checkpoints are read in one piece of their size; a pipe (`--model
// <(zcat run.ckpt.gz)`) has none, and is read as a stream.
TEST(Checkpoint, LoadsThroughAPipe) {
  Saved saved("pipe");
  std::string fifo = saved.options.out + ".fifo";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { writeBytes(fifo, saved.bytes); });
  std::string error = loadError(fifo);
  writer.join();
  std::remove(fifo.c_str());
  EXPECT_EQ(error, "");
}

// A copy (what another decoding thread gets) is the session as a
// checkpoint of it would load: the same payload, parameters included, and
// a model of its own.
TEST(Checkpoint, ACopyIsTheSessionReloaded) {
  Saved saved("copy");
  std::unique_ptr<Session> copy = saved.session->copy();
  EXPECT_EQ(copy->serialize(), saved.session->serialize());
  EXPECT_EQ(copy->serialize(), Session::load(saved.options.out)->serialize());
  EXPECT_NE(copy->model.get(), saved.session->model.get());
  EXPECT_EQ(copy->translate({"one two"}, 2, 1.0f, 8),
            saved.session->translate({"one two"}, 2, 1.0f, 8));
}

// Building sets the process's product precision (what training reads): a
// copy of a bf16 session leaves it as it was, and is bf16 itself.
TEST(Checkpoint, ACopyLeavesTheProcessPrecision) {
  Saved saved("copy-bf16");
  saved.options.precision = "bf16";
  Session bf16(saved.options, saved.data);
  models::setProductPrecision(cellrt::Precision::F32);
  std::unique_ptr<Session> copy = bf16.copy();
  EXPECT_EQ(models::productPrecision(), cellrt::Precision::F32);
  EXPECT_EQ(copy->model->precision(), cellrt::Precision::BF16);
}

/// Saves `session` to `path` with the float `marker` (once in the file)
/// replaced by `value` and the checksum mended: a checkpoint that
/// writeParams would refuse to write.
void saveWithValue(Session &session, const std::string &path, float marker,
                   float value) {
  session.save(path);
  std::string bytes = bytesOf(path);
  std::string from(reinterpret_cast<const char *>(&marker), 4);
  size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(bytes.find(from, at + 1), std::string::npos);
  bytes.replace(at, 4, reinterpret_cast<const char *>(&value), 4);
  const size_t header = 8 + 22 + 16; // magic, payload size, checksum
  uint64_t sum = models::fnv1a64(bytes.substr(header));
  bytes.replace(header - 8, 8, reinterpret_cast<const char *>(&sum), 8);
  writeBytes(path, bytes);
}

// NaN parameters (or Adam moments) used to load, then give empty output
// or a NaN loss after --resume; and a session holding them was saved.
TEST(Checkpoint, NonFiniteParametersAreRejectedByName) {
  Saved saved("nan");
  Param *p = saved.session->model->params()[2];
  p->value[5] = std::nanf("");
  try {
    saved.session->save(saved.options.out);
    FAIL() << "saved a NaN parameter";
  } catch (const DataError &error) {
    EXPECT_CONTAINS(error.what(), "parameter " + p->name + " holds NaN");
  }
  EXPECT_EQ(bytesOf(saved.options.out), saved.bytes);
  p->value[5] = 1234.5678f;
  saveWithValue(*saved.session, saved.options.out, 1234.5678f, std::nanf(""));
  EXPECT_CONTAINS(loadError(saved.options.out), "parameter " + p->name);
  p->value[5] = 0;
  p->m.assign(p->value.size(), 0.f);
  p->v.assign(p->value.size(), 0.f);
  p->v[3] = 8765.4321f;
  saveWithValue(*saved.session, saved.options.out, 8765.4321f, INFINITY);
  EXPECT_CONTAINS(loadError(saved.options.out),
                  "parameter " + p->name + " (optimiser slot) holds Inf");
}

// A full disk (PATH.tmp on /dev/full) or a missing folder: a clear error,
// the previous checkpoint intact, no temporary left behind.
TEST(Checkpoint, FailedSaveKeepsThePreviousCheckpoint) {
  Saved saved("full");
  const std::string &path = saved.options.out;
  std::remove((path + ".tmp").c_str());
  ASSERT_EQ(symlink("/dev/full", (path + ".tmp").c_str()), 0);
  saved.session->state.updates = 99;
  try {
    saved.session->save(path);
    FAIL() << "saving to a full disk succeeded";
  } catch (const DataError &error) {
    EXPECT_CONTAINS(error.what(), "No space left on device");
  }
  EXPECT_EQ(bytesOf(path), saved.bytes);
  EXPECT_NE(access((path + ".tmp").c_str(), F_OK), 0);
  std::string nowhere = testing::TempDir() + "no-such-dir/model.ckpt";
  try {
    saved.session->save(nowhere);
    FAIL() << "saving into a missing folder succeeded";
  } catch (const DataError &error) {
    EXPECT_CONTAINS(error.what(), "cannot write the checkpoint");
  }
}

// A scheduled save that fails warns; training goes on to the end.
TEST(Checkpoint, TrainingSurvivesAFailedPeriodicSave) {
  TrainOptions o = tiny("periodic");
  o.saveEvery = 2;
  o.maxUpdates = 6;
  TrainData data = loadTrainData(o);
  Session session(o, data);
  std::remove((o.out + ".tmp").c_str());
  ASSERT_EQ(symlink("/dev/full", (o.out + ".tmp").c_str()), 0);
  session.train(data);
  EXPECT_EQ(session.state.updates, 6);
  EXPECT_EQ(Session::load(o.out)->state.updates, 6);
}

// A NaN gradient stops training before Adam applies it, naming the update,
// the parameter and the batch; --skip-nonfinite skips that update only.
TEST(Checkpoint, NonFiniteGradientStopsOrIsSkipped) {
  TrainOptions o = tiny("nan-grad");
  o.maxUpdates = 5;
  TrainData data = loadTrainData(o);
  Session session(o, data);
  Param *poisoned = session.model->params()[1];
  bool fired = false; // once: a skipped update is retried by the next batch
  session.beforeUpdate = [&](int64_t update) {
    if (update == 3 && !fired)
      poisoned->grad[0] = std::nanf("");
    fired |= update == 3;
  };
  try {
    session.train(data);
    FAIL() << "trained on through a NaN gradient";
  } catch (const DataError &error) {
    EXPECT_CONTAINS(error.what(), "update 3 (epoch 1, batch 3 of");
    EXPECT_CONTAINS(error.what(), "parameter " + poisoned->name);
  }
  EXPECT_EQ(session.state.updates, 2);
  for (float x : poisoned->value)
    ASSERT_TRUE(std::isfinite(x));

  Session skipping(o, data);
  skipping.options.skipNonfinite = true;
  poisoned = skipping.model->params()[1];
  fired = false;
  skipping.beforeUpdate = session.beforeUpdate;
  skipping.train(data);
  EXPECT_EQ(skipping.state.skippedUpdates, 1);
  EXPECT_EQ(skipping.state.updates, 5);
  EXPECT_EQ(loadError(o.out), "");
}

// `--batch-size 0` used to reach cellrt and std::abort the process.
TEST(Checkpoint, RuntimeErrorsThrowInsteadOfAborting) {
  EXPECT_THROW(check(cellrt::Status::error("bad lengths"), "decoder"),
               CellRuntimeError);
  Saved saved("translate");
  EXPECT_THROW(saved.session->translate({"one"}, 2, 1.0f, 0), DataError);
  EXPECT_THROW(saved.session->translate({"one"}, 0, 1.0f, 4), DataError);
  EXPECT_THROW(saved.session->translate({"one"}, 2, NAN, 4), DataError);
}

// A model trained with `--cell my.cell` once failed to load when the file
// had moved ("cannot compile my.cell"), and would have loaded a different
// cell had the file changed. The checkpoint keeps the source.
TEST(Checkpoint, KeepsTheSourceOfACellFile) {
  std::string cellPath = testing::TempDir() + "checkpoint-kept.cell";
  writeBytes(cellPath, bytesOf(CELLC_SOURCE_DIR "/cells/ran.cell"));
  TrainOptions options = test::tinyRun("checkpoint-cell-file", cellPath);
  TrainData data = loadTrainData(options);
  Session trained(options, data);
  Rng init(5);
  trained.model->initialize(init.next(), cellrt::InitScheme::uniform(0.3f));
  trained.save(options.out);
  Batch batch = makeBatch({{{4, 5, 6}, {4, 5}}, {{5, 4}, {6}}}, {0, 1});
  double loss = trained.model->loss(batch, false, nullptr);

  // Another cell under the same name: the checkpoint's must still be used.
  writeBytes(cellPath, bytesOf(CELLC_SOURCE_DIR "/cells/gru.cell"));
  auto moved = Session::load(options.out);
  EXPECT_EQ(moved->model->loss(batch, false, nullptr), loss);
  EXPECT_EQ(moved->model->parameterCount(), trained.model->parameterCount());
  std::remove(cellPath.c_str());
  EXPECT_EQ(Session::load(options.out)->model->loss(batch, false, nullptr),
            loss);
}
