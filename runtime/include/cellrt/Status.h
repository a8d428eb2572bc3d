//===- cellrt/Status.h - Errors the runtime returns -------------*- C++ -*-===//
//
// Status and Expected: how every runtime call reports an error, with a
// message for the user. Their own header, so that code which only calls the
// runtime (the model drivers) does not include the plan's.
//
//===----------------------------------------------------------------------===//

#ifndef CELLRT_STATUS_H
#define CELLRT_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace cellrt {

/// Success, or an error with a message for the user. The runtime returns
/// errors; it never prints or aborts.
class Status {
public:
  Status() = default;
  static Status success() { return Status(); }
  static Status error(std::string message) {
    Status status;
    status.failed = true;
    status.text = std::move(message);
    return status;
  }
  bool ok() const { return !failed; }
  const std::string &message() const { return text; }

private:
  bool failed = false;
  std::string text;
};

/// A value or the error that prevented computing it.
template <typename T> class Expected {
public:
  Expected(T value) : value(std::move(value)) {}
  Expected(Status error) : status(std::move(error)) {
    assert(!status.ok() && "an Expected built from a Status must be an error");
  }
  bool ok() const { return value.has_value(); }
  explicit operator bool() const { return ok(); }
  const Status &getStatus() const { return status; }
  const std::string &error() const { return status.message(); }
  T &operator*() { return *value; }
  const T &operator*() const { return *value; }
  T *operator->() { return &*value; }
  const T *operator->() const { return &*value; }

private:
  std::optional<T> value;
  Status status;
};

} // namespace cellrt

#endif // CELLRT_STATUS_H
