//===- DeviceTest.cpp - The executor on a device with its own memory ------===//
//
// A GPU has its own memory: the executor must copy the caller's arrays in,
// hand the device only device addresses, pass kernels their scratch, and
// copy results back. No GPU exists here, so this test runs every cell in
// cells/ on SeparateMemoryDevice: the CPU's kernels and GEMMs behind the
// interface a GPU backend implements, but with memory of its own that
// starts as NaN, and every address it is given checked against its live
// allocations. Forward (both directions, ragged lengths), training forward
// and backward with every gradient must give exactly the CPU's results.
//
//===----------------------------------------------------------------------===//

#include "cellrt/PlanTables.h"
#include "cellrt/Runtime.h"
#include "cellrt/cellrt.h"
#include "runtime/Gemm.h"
#include "runtime/HostDevice.h"
#include "test/unit/CellRunner.h"

#include "atr.h"
#include "gru.h"
#include "lau.h"
#include "lstm.h"
#include "probed.h"
#include "ran.h"
#include "rnn.h"
#include "srnmt.h"
#include "sru.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <dlfcn.h>
#include <functional>
#include <limits>
#include <map>
#include <random>

using namespace cellrt;
using namespace cellrt_test;

namespace {

/// The CPU's kernels and GEMMs on memory the caller cannot see: allocations
/// are poisoned with NaN, and any address given to a device operation that
/// is not inside a live allocation (or a host address given as a device
/// one) is recorded as an error.
class SeparateMemoryDevice : public detail::HostDevice {
public:
  using HostDevice::HostDevice;

  bool sharesHostMemory() const override { return false; }
  // Kernels offset their scratch by row x stride, so per-row buffers
  // exercise the GPU's launch layout on the CPU.
  bool scratchPerRow() const override { return true; }

  void *allocate(size_t bytes) override {
    void *memory = HostDevice::allocate(bytes);
    float *floats = static_cast<float *>(memory);
    for (size_t i = 0; i < bytes / 4; ++i)
      floats[i] = std::numeric_limits<float>::quiet_NaN();
    live[reinterpret_cast<uintptr_t>(memory)] = bytes;
    ++allocations;
    return memory;
  }
  void release(void *memory) override {
    if (!live.erase(reinterpret_cast<uintptr_t>(memory)))
      errors.push_back("release of memory the device did not allocate");
    HostDevice::release(memory);
  }
  void upload(void *device, const void *host, size_t bytes) override {
    check(device, bytes, "upload target");
    checkHost(host, "upload source");
    ++uploads;
    uploadedBytes += int64_t(bytes);
    HostDevice::upload(device, host, bytes);
  }
  void download(void *host, const void *device, size_t bytes) override {
    check(device, bytes, "download source");
    checkHost(host, "download target");
    ++downloads;
    downloadedBytes += int64_t(bytes);
    HostDevice::download(host, device, bytes);
  }
  void copy(void *target, const void *source, size_t bytes) override {
    check(target, bytes, "copy target");
    check(source, bytes, "copy source");
    HostDevice::copy(target, source, bytes);
  }
  void zero(float *target, int64_t count) override {
    if (count > 0)
      check(target, count * 4, "zero");
    HostDevice::zero(target, count);
  }
  void accumulate(float *target, const float *source, int64_t count) override {
    check(target, count * 4, "accumulate target");
    check(source, count * 4, "accumulate source");
    HostDevice::accumulate(target, source, count);
  }
  void sumRows(const float *source, int64_t rows, int64_t stride,
               int64_t length, float *target) override {
    check(source, 4, "sumRows source");
    check(target, length * 4, "sumRows target");
    HostDevice::sumRows(source, rows, stride, length, target);
  }
  Status gemmTransposedWeight(int64_t rows, int64_t n, int64_t k,
                              const float *in, int64_t inStride,
                              const float *weight, int64_t weightStride,
                              float *out, int64_t outStride) override {
    check(in, 4, "gemm input");
    check(weight, 4, "gemm weight");
    check(out, 4, "gemm output");
    return HostDevice::gemmTransposedWeight(rows, n, k, in, inStride, weight,
                                            weightStride, out, outStride);
  }
  Status gemmAccumulate(int64_t rows, int64_t n, int64_t k, const float *in,
                        int64_t inStride, const float *weight,
                        int64_t weightStride, float *out,
                        int64_t outStride) override {
    check(in, 4, "gemm input");
    check(weight, 4, "gemm weight");
    check(out, 4, "gemm output");
    return HostDevice::gemmAccumulate(rows, n, k, in, inStride, weight,
                                      weightStride, out, outStride);
  }
  Status gemmAccumulateTransposedInput(int64_t m, int64_t n, int64_t k,
                                       const float *a, int64_t aStride,
                                       const float *b, int64_t bStride,
                                       float *out, int64_t outStride) override {
    check(a, 4, "wgrad DY");
    check(b, 4, "wgrad X");
    check(out, 4, "wgrad output");
    return HostDevice::gemmAccumulateTransposedInput(m, n, k, a, aStride, b,
                                                     bStride, out, outStride);
  }
  Status launch(const KernelLaunch &call) override {
    if (call.lengths)
      check(call.lengths, 4, "kernel lengths");
    if (!call.dims)
      errors.push_back("kernel launched without dims");
    else if (!live.empty())
      check(call.dims, 0, "kernel dims");
    for (float *pointer : *call.pointers)
      check(pointer, 0, "kernel argument");
    ++launches;
    return HostDevice::launch(call);
  }

  std::vector<std::string> errors;
  int64_t allocations = 0, uploads = 0, downloads = 0, launches = 0;
  int64_t uploadedBytes = 0, downloadedBytes = 0;
  size_t liveAllocations() const { return live.size(); }

private:
  /// `address .. address + bytes` lies in one live allocation.
  void check(const void *address, size_t bytes, const char *what) {
    if (!inside(address, bytes))
      errors.push_back(std::string(what) + " is not device memory");
  }
  void checkHost(const void *address, const char *what) {
    if (inside(address, 0))
      errors.push_back(std::string(what) + " is device memory");
  }
  bool inside(const void *address, size_t bytes) const {
    auto at = reinterpret_cast<uintptr_t>(address);
    auto it = live.upper_bound(at);
    if (it == live.begin())
      return false;
    --it;
    return at >= it->first && at + bytes <= it->first + it->second;
  }
  std::map<uintptr_t, size_t> live;
};

std::shared_ptr<SeparateMemoryDevice> separateDevice(const cellrt_image &image) {
  std::vector<cellrt_kernel_fn> kernels(image.kernels,
                                        image.kernels + image.num_kernels);
  return std::make_shared<SeparateMemoryDevice>(std::move(kernels));
}

/// The image's cell on `device`.
Expected<Cell> cellOn(const std::shared_ptr<SeparateMemoryDevice> &device,
                      const cellrt_image &image) {
  Expected<Plan> plan = decodePlanImage(image.plan);
  if (!plan)
    return plan.getStatus();
  return Cell::create(std::move(*plan), device);
}

void expectSameResults(const cellrt_image &image) {
  Expected<Cell> onHost = Cell::load(image);
  ASSERT_TRUE(onHost.ok()) << onHost.getStatus().message();
  auto device = separateDevice(image);
  Expected<Cell> onDevice = cellOn(device, image);
  ASSERT_TRUE(onDevice.ok()) << onDevice.getStatus().message();
  Problem problem(onHost->getPlan(), 7);
  bool canTrain = onHost->hasBackward();
  for (bool reverse : {false, true})
    for (bool train : {false, true}) {
      if (train && !canTrain)
        continue;
      SCOPED_TRACE(std::string(reverse ? "reverse" : "forward") +
                   (train ? ", training" : ", inference"));
      Results expected = run(*onHost, problem, reverse, train);
      // Twice with host arrays: the second call reuses the device's
      // blocks, whose contents are the first call's, not zeros. Then with
      // the arrays in the device's memory (Memory::Device).
      for (int call = 0; call < 3; ++call) {
        Memory memory = call < 2 ? Memory::Host : Memory::Device;
        Results actual =
            run(*onDevice, problem, reverse, train, nullptr, nullptr, memory);
        ASSERT_EQ(actual.arrays.size(), expected.arrays.size());
        for (size_t i = 0; i < actual.arrays.size(); ++i)
          for (size_t j = 0; j < actual.arrays[i].size(); ++j)
            ASSERT_EQ(actual.arrays[i][j], expected.arrays[i][j])
                << "array " << i << " element " << j << " (call " << call
                << ")";
      }
    }
  for (Memory memory : {Memory::Host, Memory::Device})
    EXPECT_EQ(runStep(*onDevice, problem, nullptr, memory).arrays,
              runStep(*onHost, problem).arrays)
        << "step, " << (memory == Memory::Host ? "host" : "device")
        << " arrays";
  EXPECT_TRUE(device->errors.empty())
      << device->errors.size() << " errors, first: " << device->errors[0];
  // The device path really ran: copies in and out, kernels launched.
  EXPECT_GT(device->uploads, 0);
  EXPECT_GT(device->downloads, 0);
  EXPECT_GT(device->launches, 0);
}

} // namespace

#define DEVICE_TEST(Name, name)                                                \
  TEST(SeparateMemoryDevice, Name) { expectSameResults(cellc_##name##_image()); }

DEVICE_TEST(Atr, atr)
DEVICE_TEST(Gru, gru)
DEVICE_TEST(Lstm, lstm)
DEVICE_TEST(Ran, ran)
DEVICE_TEST(Lau, lau)
DEVICE_TEST(Sru, sru)
DEVICE_TEST(Srnmt, srnmt)
DEVICE_TEST(Rnn, rnn)
// cells/lstm.cell compiled with --probe i,f,o (test/unit/Inputs/probed.cell).
DEVICE_TEST(Probed, probed)

/// With Memory::Device a call copies none of the caller's arrays in or
/// out: it uploads only the lengths and dims (the host's), in forward,
/// training forward, backward and a step.
static void expectDeviceArraysUsedInPlace(const cellrt_image &image) {
  auto device = separateDevice(image);
  Expected<Cell> cell = cellOn(device, image);
  ASSERT_TRUE(cell.ok()) << cell.error();
  Problem problem(cell->getPlan(), 13);
  int64_t T = problem.T, B = problem.B;
  int64_t bound = B * 4 + int64_t(cell->getPlan().dims.size()) * 8;
  auto expectOnlyLengthsAndDims = [&](const char *call,
                                      const std::function<Status()> &run) {
    int64_t up = device->uploadedBytes, down = device->downloadedBytes;
    Status status = run();
    EXPECT_TRUE(status.ok()) << call << ": " << status.message();
    EXPECT_LE(device->uploadedBytes - up, bound) << call;
    EXPECT_EQ(device->downloadedBytes - down, 0) << call;
  };
  ForwardArgs args = problem.args(/*reverse=*/false);
  std::vector<float> output(T * B * problem.outputWidth);
  args.output = {output.data(), {T, B, problem.outputWidth}};
  std::vector<std::vector<float>> finals;
  for (int64_t width : problem.stateWidths)
    finals.emplace_back(B * width);
  for (size_t i = 0; i < finals.size(); ++i)
    args.finalStates.push_back({finals[i].data(), {B, problem.stateWidths[i]}});
  OnDevice arrays(*cell);
  arrays.move(args);
  expectOnlyLengthsAndDims("forward", [&] { return cell->forward(args); });
  Tape tape;
  expectOnlyLengthsAndDims("training forward",
                           [&] { return cell->forward(args, tape); });
  BackwardArgs gradients;
  gradients.outputGradient = {problem.outputGradient.data(),
                              {T, B, problem.outputWidth}};
  std::map<std::string, std::vector<float>> paramGradients;
  for (const auto &[name, param] : problem.params)
    paramGradients[name].assign(param.first.size(), 0.0f);
  for (auto &[name, values] : paramGradients)
    gradients.paramGradients[name] = {values.data(),
                                      problem.params.at(name).second};
  arrays.move(gradients);
  expectOnlyLengthsAndDims(
      "backward", [&] { return cell->backward(args, gradients, tape); });
  // A step from the final states into the (now unused) initial states'
  // device arrays, reading step 0 of each input.
  StepArgs step;
  for (size_t i = 0; i < problem.inputs.size(); ++i)
    step.inputs.push_back({args.inputs[i].data, {B, problem.inputWidths[i]}});
  for (size_t i = 0; i < finals.size(); ++i) {
    step.states.push_back(
        {args.finalStates[i].data, {B, problem.stateWidths[i]}});
    step.nextStates.push_back({const_cast<float *>(args.initialStates[i].data),
                               {B, problem.stateWidths[i]}});
  }
  step.params = args.params;
  step.memory = Memory::Device;
  std::vector<int32_t> parents(B, 0);
  step.sourceRows = parents.data();
  expectOnlyLengthsAndDims("step", [&] { return cell->step(step); });
  EXPECT_TRUE(device->errors.empty())
      << device->errors.size() << " errors, first: " << device->errors[0];
}

TEST(SeparateMemoryDevice, DeviceArraysAreUsedInPlaceGru) {
  expectDeviceArraysUsedInPlace(cellc_gru_image());
}
TEST(SeparateMemoryDevice, DeviceArraysAreUsedInPlaceLstm) {
  expectDeviceArraysUsedInPlace(cellc_lstm_image());
}

TEST(SeparateMemoryDevice, BackwardRefusesArraysElsewhereThanForwards) {
  Expected<Cell> cell =
      cellOn(separateDevice(cellc_atr_image()), cellc_atr_image());
  ASSERT_TRUE(cell.ok()) << cell.error();
  Problem problem(cell->getPlan(), 3);
  ForwardArgs args = problem.args(false);
  OnDevice arrays(*cell);
  arrays.move(args);
  Tape tape;
  ASSERT_TRUE(cell->forward(args, tape).ok());
  BackwardArgs gradients; // host memory: not where forward's arrays were
  Status status = cell->backward(args, gradients, tape);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("device memory"), std::string::npos)
      << status.message();
}

TEST(DeviceArrayTest, CopiesInAndOutWithinItsBounds) {
  Expected<Cell> cell = Cell::load(cellc_atr_image());
  ASSERT_TRUE(cell.ok());
  Expected<DeviceArray> array = cell->allocateArray(4);
  ASSERT_TRUE(array.ok());
  EXPECT_EQ(array->size(), 4);
  float in[2] = {1.5f, -2.0f}, out[4] = {};
  ASSERT_TRUE(array->upload(in, 2, 2).ok());
  ASSERT_TRUE(array->upload(in, 2, 0).ok());
  ASSERT_TRUE(array->download(out, 4).ok());
  EXPECT_EQ(std::vector<float>(out, out + 4),
            (std::vector<float>{1.5f, -2.0f, 1.5f, -2.0f}));
  Status past = array->upload(in, 2, 3);
  EXPECT_FALSE(past.ok());
  EXPECT_NE(past.message().find("[3, 5) are outside the array of 4"),
            std::string::npos)
      << past.message();
  EXPECT_FALSE(array->download(out, -1).ok());
  EXPECT_FALSE(cell->allocateArray(-1).ok());
  DeviceArray moved = std::move(*array);
  EXPECT_EQ(moved.size(), 4);
  EXPECT_EQ(array->data(), nullptr);
  // An empty (moved-from or default) array copies nothing, and says so.
  EXPECT_TRUE(array->download(out, 0).ok());
  EXPECT_TRUE(DeviceArray().upload(in, 0).ok());
  EXPECT_FALSE(DeviceArray().upload(in, 1).ok());
}

TEST(SeparateMemoryDevice, OutOfMemoryIsAnError) {
  /// A device that can never allocate: the call fails cleanly.
  class Full : public SeparateMemoryDevice {
  public:
    using SeparateMemoryDevice::SeparateMemoryDevice;
    void *allocate(size_t) override { return nullptr; }
  };
  cellrt_image image = cellc_atr_image();
  std::vector<cellrt_kernel_fn> kernels(image.kernels,
                                        image.kernels + image.num_kernels);
  Expected<Plan> plan = decodePlanImage(image.plan);
  ASSERT_TRUE(plan.ok());
  Expected<Cell> cell =
      Cell::create(std::move(*plan), std::make_shared<Full>(kernels));
  ASSERT_TRUE(cell.ok());
  Problem problem(cell->getPlan(), 3);
  ForwardArgs args = problem.args(false);
  Status status = cell->forward(args);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("out of device memory"), std::string::npos)
      << status.message();
}

/// packWeights on a device with memory of its own keeps the device's copies
/// of every param and stacked weight (and no weights packed for oneDNN, which
/// only the CPU's products read): a decoding step then uploads no params, gives
/// exactly the host's result with the weights stacked per call, and the
/// copies are released with the last PackedWeights.
static void expectPackedWeightsStayOnTheDevice(const cellrt_image &image) {
  Expected<Cell> onHost = Cell::load(image);
  ASSERT_TRUE(onHost.ok());
  auto device = separateDevice(image);
  Expected<Cell> onDevice = cellOn(device, image);
  ASSERT_TRUE(onDevice.ok());
  Problem problem(onHost->getPlan(), 9);
  Results unpacked = runStep(*onDevice, problem);
  size_t liveBefore = device->liveAllocations();
  {
    Expected<PackedWeights> hostPacked =
        onHost->packWeights(problem.paramArrays());
    Expected<PackedWeights> packed =
        onDevice->packWeights(problem.paramArrays());
    ASSERT_TRUE(packed.ok() && hostPacked.ok()) << packed.error();
    ASSERT_NE(packed->onDevice(), nullptr);
    EXPECT_EQ(hostPacked->onDevice(), nullptr);
    std::map<std::string, ConstArray> arrays = problem.paramArrays();
    const WeightDecl &weight = onHost->getPlan().weights[0];
    int64_t rows = 0, cols = arrays.at(weight.params[0]).shape[1];
    for (const std::string &name : weight.params)
      rows += arrays.at(name).shape[0];
    EXPECT_EQ(packed->product(0, rows, cols), nullptr);
    EXPECT_NE(hostPacked->product(0, rows, cols), nullptr);
    Results expected = runStep(*onHost, problem);
    int64_t uploadsBefore = device->uploads;
    Results actual = runStep(*onDevice, problem, &*packed);
    int64_t uploadsPacked = device->uploads - uploadsBefore;
    uploadsBefore = device->uploads;
    runStep(*onDevice, problem);
    int64_t uploadsUnpacked = device->uploads - uploadsBefore;
    EXPECT_EQ(actual.arrays, expected.arrays);
    EXPECT_EQ(unpacked.arrays, expected.arrays);
    EXPECT_LE(uploadsPacked + int64_t(onHost->getPlan().params.size()),
              uploadsUnpacked);
  }
  EXPECT_EQ(device->liveAllocations(), liveBefore) << "packed copies not released";
  EXPECT_TRUE(device->errors.empty())
      << device->errors.size() << " errors, first: " << device->errors[0];
}

TEST(SeparateMemoryDevice, PackedWeightsStayOnTheDeviceGru) {
  expectPackedWeightsStayOnTheDevice(cellc_gru_image());
}
TEST(SeparateMemoryDevice, PackedWeightsStayOnTheDeviceSrnmt) {
  expectPackedWeightsStayOnTheDevice(cellc_srnmt_image());
}
TEST(SeparateMemoryDevice, PackedWeightsStayOnTheDeviceLstm) {
  expectPackedWeightsStayOnTheDevice(cellc_lstm_image());
}

namespace {

/// What the scratch-checking kernel saw: per row, its two scratch slots.
struct SeenScratch {
  std::vector<float *> first, second;
  std::vector<int64_t> strides;
  int calls = 0;
} seen;

/// One argument (rows of 4 floats), two scratch slots: records where the
/// slots are, writes through both, and copies the row through them.
void scratchKernel(int64_t rowBegin, int64_t rowEnd, int64_t,
                   const int32_t *, const int64_t *, float *const *ptrs,
                   const int64_t *strides) {
  ++seen.calls;
  seen.strides.assign(strides, strides + 3);
  for (int64_t row = rowBegin; row < rowEnd; ++row) {
    float *first = ptrs[1] + row * strides[1];
    float *second = ptrs[2] + row * strides[2];
    seen.first[row] = first;
    seen.second[row] = second;
    float *values = ptrs[0] + row * strides[0];
    for (int i = 0; i < 4; ++i)
      first[i] = values[i] + 1;
    for (int i = 0; i < 4; ++i)
      second[i] = first[i] * 2;
    for (int i = 0; i < 4; ++i)
      values[i] = second[i];
  }
}

} // namespace

// CPU kernels take their scratch from the device, one buffer per thread
// (row stride 0), 64-byte aligned slots, after their arguments.
TEST(HostDevice, KernelsGetThreadScratchAfterTheirArguments) {
  detail::HostDevice device({scratchKernel});
  const int64_t rows = 64;
  std::vector<float> data(rows * 4);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<float>(i);
  std::vector<float *> pointers{data.data()};
  std::vector<int64_t> strides{4};
  std::vector<int64_t> lengths{5, 3};
  seen = SeenScratch();
  seen.first.assign(rows, nullptr);
  seen.second.assign(rows, nullptr);
  KernelLaunch call;
  call.rowEnd = rows;
  call.pointers = &pointers;
  call.strides = &strides;
  call.scratchLengths = &lengths;
  call.work = int64_t(1) << 30;
  ASSERT_TRUE(device.launch(call).ok());
  EXPECT_EQ(seen.strides, (std::vector<int64_t>{4, 0, 0}));
  for (int64_t row = 0; row < rows; ++row) {
    ASSERT_NE(seen.first[row], nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(seen.first[row]) % 64, 0u);
    // The first slot's 5 floats round up to a 16-float line.
    EXPECT_EQ(seen.second[row], seen.first[row] + 16);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(data[row * 4 + i], (row * 4 + i + 1) * 2.0f);
  }
  // The caller's argument arrays are left as they were.
  EXPECT_EQ(pointers.size(), 1u);
  EXPECT_EQ(strides.size(), 1u);
}

// Scratch the machine cannot give is an error, not an abort, and the
// kernel does not run.
TEST(HostDevice, ScratchThatCannotBeHadIsAnError) {
  detail::HostDevice device({scratchKernel});
  std::vector<float> data(4);
  std::vector<float *> pointers{data.data()};
  std::vector<int64_t> strides{4};
  seen = SeenScratch();
  seen.first.assign(1, nullptr);
  seen.second.assign(1, nullptr);
  for (std::vector<int64_t> lengths :
       {std::vector<int64_t>{int64_t(1) << 50, 3},
        std::vector<int64_t>{INT64_MAX, INT64_MAX}}) {
    KernelLaunch call;
    call.rowEnd = 1;
    call.pointers = &pointers;
    call.strides = &strides;
    call.scratchLengths = &lengths;
    Status status = device.launch(call);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find("out of memory: kernel 0 needs"),
              std::string::npos)
        << status.message();
  }
  EXPECT_EQ(seen.calls, 0);
}

// Zeroing and bias sums over many rows split across the threads; each
// touches exactly its range (no element missed, none beyond the end), and
// the sums give the same bits on any number of threads.
TEST(HostDevice, ZeroAndRowSumsSplitAcrossThreads) {
  detail::HostDevice device({scratchKernel});
  const int64_t count = 3 * 16 * 1024 * 16 + 5; // several chunks and a tail
  std::vector<float> data(count + 1, 7.0f);
  const int64_t rows = 3000, length = 517, stride = 530;
  std::vector<float> source(rows * stride);
  for (size_t i = 0; i < source.size(); ++i)
    source[i] = std::sin(0.001f * i);
  std::vector<std::vector<float>> sums;
  for (int threads : {1, 2}) {
    cellrt::setNumThreads(threads);
    std::fill(data.begin(), data.end(), 7.0f);
    device.zero(data.data(), count);
    EXPECT_EQ(std::count(data.begin(), data.end() - 1, 0.0f), count);
    EXPECT_EQ(data.back(), 7.0f);
    sums.emplace_back(length + 1, 1.0f);
    device.sumRows(source.data(), rows, stride, length, sums.back().data());
    EXPECT_EQ(sums.back().back(), 1.0f);
  }
  cellrt::setNumThreads(1);
  EXPECT_EQ(sums[0], sums[1]);
  for (int64_t j : {int64_t(0), int64_t(16), length - 1}) {
    double want = 1.0;
    for (int64_t row = 0; row < rows; ++row)
      want += source[row * stride + j];
    EXPECT_NEAR(sums[0][j], want, 1e-3) << "column " << j;
  }
}

// A C caller that did not compile the cell (ctypes) learns its inputs,
// states and params, and their sizes for given dims.
TEST(CApi, DescribesTheCell) {
  cellrt_cell *cell = cellrt_cell_load(cellc_lstm_image());
  ASSERT_NE(cell, nullptr);
  std::map<std::string, int64_t> sizes = {{"H", 5}, {"I", 3}};
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < cellrt_cell_num_dims(cell); ++i)
    dims.push_back(sizes.at(cellrt_cell_dim_name(cell, i)));
  EXPECT_STREQ(cellrt_cell_input_name(cell, 0), "x");
  EXPECT_EQ(cellrt_cell_input_length(cell, 0, dims.data()), 3);
  ASSERT_EQ(cellrt_cell_num_states(cell), 2);
  EXPECT_STREQ(cellrt_cell_state_name(cell, 1), "c");
  EXPECT_EQ(cellrt_cell_state_length(cell, 1, dims.data()), 5);
  EXPECT_EQ(cellrt_cell_output_width(cell, dims.data()), 5);
  ASSERT_EQ(cellrt_cell_num_params(cell), 12);
  EXPECT_STREQ(cellrt_cell_param_name(cell, 0), "Wi");
  EXPECT_EQ(cellrt_cell_param_rank(cell, 0), 2);
  EXPECT_EQ(cellrt_cell_param_extent(cell, 0, 0, dims.data()), 5);
  EXPECT_EQ(cellrt_cell_param_extent(cell, 0, 1, dims.data()), 3);
  EXPECT_EQ(cellrt_cell_param_rank(cell, 8), 1); // bi: [H]
  // Out of range, or no dims to size with.
  EXPECT_EQ(cellrt_cell_input_name(cell, 1), nullptr);
  EXPECT_EQ(cellrt_cell_param_extent(cell, 0, 2, dims.data()), -1);
  EXPECT_EQ(cellrt_cell_state_length(cell, 0, nullptr), -1);
  cellrt_cell_free(cell);
}

// A device that multiplies only in f32 (as the CUDA backend does) takes no
// bf16 plan, and its cells do not switch to bf16.
TEST(DevicePrecision, AnF32DeviceRefusesBf16) {
  cellrt_image image = cellc_gru_image();
  Expected<Plan> plan = decodePlanImage(image.plan);
  ASSERT_TRUE(plan.ok());
  Plan bf16Plan = *plan;
  bf16Plan.precision = Precision::BF16;
  Expected<Cell> refused = Cell::create(bf16Plan, separateDevice(image));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error(),
            "plan of cell 'gru' multiplies in bf16 but the device multiplies "
            "in f32 only (compile it without --precision bf16)");
  Expected<Cell> cell = Cell::create(*plan, separateDevice(image));
  ASSERT_TRUE(cell.ok()) << cell.error();
  Expected<Cell> switched = cell->withPrecision(Precision::BF16);
  ASSERT_FALSE(switched.ok());
  EXPECT_EQ(switched.error(),
            "cell 'gru': this device multiplies in f32 only, not bf16");
  EXPECT_TRUE(cell->withPrecision(Precision::F32).ok());
}

// The C API reads and changes what a cell's products read; a wrong name is
// an error that leaves the cell as it was.
TEST(CApi, SetsThePrecision) {
  cellrt_cell *cell = cellrt_cell_load(cellc_lstm_image());
  ASSERT_NE(cell, nullptr);
  EXPECT_STREQ(cellrt_cell_precision(cell), "f32");
  ASSERT_EQ(cellrt_cell_set_precision(cell, "bf16"), 0) << cellrt_last_error();
  EXPECT_STREQ(cellrt_cell_precision(cell), "bf16");
  EXPECT_NE(cellrt_cell_set_precision(cell, "fp16"), 0);
  EXPECT_NE(std::string(cellrt_last_error()).find("f32 or bf16"),
            std::string::npos);
  EXPECT_NE(cellrt_cell_set_precision(cell, nullptr), 0);
  EXPECT_STREQ(cellrt_cell_precision(cell), "bf16");
  ASSERT_EQ(cellrt_cell_set_precision(cell, "f32"), 0);
  EXPECT_STREQ(cellrt_cell_precision(cell), "f32");
  cellrt_cell_free(cell);
}

// Products too small to share run on the calling thread alone (Gemm.cpp);
// every product, small or large, leaves OpenMP's team size as it found it
// and computes the same result.
TEST(GemmThreads, ProductsLeaveOpenMPsTeamSizeAsTheyFoundIt) {
  auto setThreads = reinterpret_cast<void (*)(int)>(
      dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  auto maxThreads = reinterpret_cast<int (*)()>(
      dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  ASSERT_TRUE(setThreads && maxThreads) << "no OpenMP runtime loaded";
  struct Restore {
    void (*set)(int);
    int threads;
    ~Restore() { set(threads); }
  } restore{setThreads, maxThreads()};
  setThreads(3);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  // 2*rows*n*k flops: 2*1*64*64 (alone) and 2*64*256*128 (shared).
  for (auto [rows, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 64, 64},
                            {64, 256, 128}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(n) + "x" +
                 std::to_string(k));
    std::vector<float> in(rows * k), weight(n * k), out(rows * n, 0.5f);
    for (float &x : in)
      x = value(rng);
    for (float &x : weight)
      x = value(rng);
    Status status = detail::gemmTransposedWeight(
        rows, n, k, in.data(), k, weight.data(), k, out.data(), n, 1.0f);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(maxThreads(), 3);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; c += 17) {
        double expected = 0.5;
        for (int64_t i = 0; i < k; ++i)
          expected += double(in[r * k + i]) * weight[c * k + i];
        EXPECT_NEAR(out[r * n + c], expected, 1e-4) << r << "," << c;
      }
    status = detail::gemmAccumulate(rows, k, n, out.data(), n, weight.data(),
                                    k, in.data(), k);
    ASSERT_TRUE(status.ok()) << status.message();
    EXPECT_EQ(maxThreads(), 3);
  }
}

// A weight packed for oneDNN's matmul multiplies as sgemm does (within
// rounding: the sums add in another order) at the row counts a decoder
// uses. With dense rows oneDNN keeps the packed layout for every row
// count; with rows wider than the operands (a product of a buffer's
// columns) it wants another layout here, so the packed product refuses
// and the CPU multiplies by the plain weight instead.
TEST(PackedProductTest, MultipliesAsTheTransposedProductDoes) {
  const int64_t n = 192, k = 80;
  std::vector<float> weight(n * k);
  for (size_t i = 0; i < weight.size(); ++i)
    weight[i] = float((i * 37) % 101) / 101.0f - 0.5f;
  std::string error;
  std::unique_ptr<cellrt::PackedProduct> packed =
      cellrt::PackedProduct::pack(weight.data(), n, k, error);
  ASSERT_NE(packed, nullptr) << error;
  EXPECT_EQ(packed->n(), n);
  EXPECT_EQ(packed->k(), k);
  detail::HostDevice host({});
  for (bool dense : {true, false})
    for (int64_t rows : {1, 4, 10, 13, 64, 256}) {
      SCOPED_TRACE("rows " + std::to_string(rows) +
                   (dense ? ", dense" : ", strided"));
      int64_t inStride = dense ? k : k + 3, outStride = dense ? n : n + 5;
      std::vector<float> in(rows * inStride);
      for (size_t i = 0; i < in.size(); ++i)
        in[i] = float((i * 53) % 97) / 97.0f - 0.5f;
      std::vector<float> expected(rows * outStride, 7.0f), actual = expected;
      ASSERT_TRUE(cellrt::detail::gemmTransposedWeight(
                      rows, n, k, in.data(), inStride, weight.data(), k,
                      expected.data(), outStride)
                      .ok());
      bool accepted = packed->accepts(rows, inStride, outStride);
      EXPECT_TRUE(accepted || !dense);
      if (!accepted)
        EXPECT_FALSE(
            packed
                ->multiply(rows, in.data(), inStride, actual.data(), outStride)
                .ok());
      cellrt::Status status =
          host.gemmPacked(rows, n, k, in.data(), inStride, weight.data(), k,
                          *packed, actual.data(), outStride);
      ASSERT_TRUE(status.ok()) << status.message();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < outStride; ++c)
          ASSERT_NEAR(actual[r * outStride + c], expected[r * outStride + c],
                      1e-5f)
              << "row " << r << " column " << c;
    }
}
