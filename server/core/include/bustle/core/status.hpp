// Status and StatusOr<T>: the one error type of the server libraries, for
// operations that can fail on bad input or a bad environment (a bind
// address, a client's Subscribe, a recorded command's arguments). A Status
// carries a code for programs and a message for people that names the
// place: the field ("observers[2].radius_m: ..."), the address or the file.
//
// Outcomes that are part of the simulation stay enums (core::RejectReason,
// despawn reasons): they are data the world records, not failures.
// Like absl::Status and std::expected<void, Error> (C++23), which this
// toolchain's C++20 lacks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace bustle::core {

enum class StatusCode : std::uint8_t {
  Ok = 0,
  InvalidArgument,     // the input itself is wrong (a field, a flag, a frame)
  FailedPrecondition,  // the input is fine but the state does not allow it
  Unavailable,         // the environment refused (a port, a sidecar, a socket)
  DataLoss,            // stored data is unreadable or inconsistent
  Internal,            // an invariant of ours is broken
};
inline const char* to_string(StatusCode code) {
  switch (code) {
    case StatusCode::Ok:
      return "ok";
    case StatusCode::InvalidArgument:
      return "invalid_argument";
    case StatusCode::FailedPrecondition:
      return "failed_precondition";
    case StatusCode::Unavailable:
      return "unavailable";
    case StatusCode::DataLoss:
      return "data_loss";
    case StatusCode::Internal:
      return "internal";
  }
  return "unknown";
}

class [[nodiscard]] Status {
 public:
  Status() = default;  // Ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status invalid_argument(std::string message) {
    return {StatusCode::InvalidArgument, std::move(message)};
  }
  static Status failed_precondition(std::string message) {
    return {StatusCode::FailedPrecondition, std::move(message)};
  }
  static Status unavailable(std::string message) {
    return {StatusCode::Unavailable, std::move(message)};
  }
  static Status data_loss(std::string message) {
    return {StatusCode::DataLoss, std::move(message)};
  }
  static Status internal(std::string message) { return {StatusCode::Internal, std::move(message)}; }

  bool ok() const { return code_ == StatusCode::Ok; }
  StatusCode code() const { return code_; }
  // Empty when ok().
  const std::string& message() const { return message_; }

  // The same failure seen from an enclosing place: "Subscribe." + message,
  // "args: " + message. Ok stays Ok.
  Status within(std::string_view prefix) const {
    if (ok()) return {};
    return {code_, std::string(prefix) + message_};
  }

 private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

// A value or the Status saying why there is none.
template <class T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit, as absl::StatusOr
  StatusOr(Status status) : status_(std::move(status)) {
    if (status_.ok()) status_ = Status::internal("StatusOr built from an Ok status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  // [Precondition: ok()]
  T& value() { return *value_; }
  const T& value() const { return *value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;  // Ok exactly when value_ is set
};

}  // namespace bustle::core
