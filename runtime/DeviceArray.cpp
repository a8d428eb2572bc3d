//===- DeviceArray.cpp - Caller arrays in a cell's device memory
//-----------===//
//
// A caller who keeps a call's arrays on the device (Memory::Device) gets the
// memory here, from the cell's Device, and fills and reads it through the
// same Device's copies, so the runtime's own calls and the caller's are
// ordered on one queue (a GPU's stream).
//
//===----------------------------------------------------------------------===//

#include "cellrt/Device.h"
#include "cellrt/Runtime.h"

#include <algorithm>
#include <utility>

using namespace cellrt;

DeviceArray::~DeviceArray() {
  if (memory)
    device->release(memory);
}

DeviceArray::DeviceArray(DeviceArray &&other) noexcept
    : device(std::move(other.device)),
      memory(std::exchange(other.memory, nullptr)),
      count(std::exchange(other.count, 0)) {}

DeviceArray &DeviceArray::operator=(DeviceArray &&other) noexcept {
  if (this != &other) {
    if (memory)
      device->release(memory);
    device = std::move(other.device);
    memory = std::exchange(other.memory, nullptr);
    count = std::exchange(other.count, 0);
  }
  return *this;
}

Status DeviceArray::checkRange(int64_t floats, int64_t offset,
                               const char *what) const {
  if (floats < 0 || offset < 0 || offset > count || floats > count - offset)
    return Status::error(std::string("DeviceArray::") + what + ": floats [" +
                         std::to_string(offset) + ", " +
                         std::to_string(offset + floats) +
                         ") are outside the array of " + std::to_string(count));
  return Status::success();
}

Status DeviceArray::upload(const float *host, int64_t floats, int64_t offset) {
  if (Status status = checkRange(floats, offset, "upload"); !status.ok())
    return status;
  if (!floats)
    return Status::success();
  device->upload(memory + offset, host, size_t(floats) * sizeof(float));
  // A GPU copies page-locked host memory asynchronously: wait, so that the
  // caller may reuse `host` at once whatever memory it is, and so that the
  // copy is done before another cell's stream reads the array.
  return device->synchronize();
}

Status DeviceArray::download(float *host, int64_t floats,
                             int64_t offset) const {
  if (Status status = checkRange(floats, offset, "download"); !status.ok())
    return status;
  if (!floats)
    return Status::success();
  device->download(host, memory + offset, size_t(floats) * sizeof(float));
  // Reports an error of this copy, or of a call queued before it.
  return device->synchronize();
}

Expected<DeviceArray> Cell::allocateArray(int64_t count) const {
  if (count < 0)
    return Status::error("allocateArray: negative count " +
                         std::to_string(count));
  DeviceArray array;
  array.device = device;
  array.count = count;
  // One float even for none: a null address would read as "not given".
  array.memory = static_cast<float *>(
      device->allocate(size_t(std::max<int64_t>(count, 1)) * sizeof(float)));
  if (!array.memory)
    return Status::error("allocateArray: out of device memory for " +
                         std::to_string(count) + " floats");
  return array;
}
