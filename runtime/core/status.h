// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Status and Result<T>: how runtime code reports failures that a plugin, a file or the operating
// system can cause. Broken invariants are bugs and abort (MSTAR_CHECK); everything else is
// returned. Codes are the ABI's codes (mstar/status.h), so a plugin's error crosses unchanged.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "mstar/status.h"

namespace mstar {

enum class Code : uint32_t {
  kOk = MSTAR_OK,
  kInvalidArgument = MSTAR_ERR_INVALID_ARGUMENT,
  kNotFound = MSTAR_ERR_NOT_FOUND,
  kAlreadyExists = MSTAR_ERR_ALREADY_EXISTS,
  kUnsupported = MSTAR_ERR_UNSUPPORTED,
  kUnavailable = MSTAR_ERR_UNAVAILABLE,
  kResourceExhausted = MSTAR_ERR_RESOURCE_EXHAUSTED,
  kFailedPrecondition = MSTAR_ERR_FAILED_PRECONDITION,
  kIncompatible = MSTAR_ERR_INCOMPATIBLE,
  kIo = MSTAR_ERR_IO,
  kDataLoss = MSTAR_ERR_DATA_LOSS,
  kCancelled = MSTAR_ERR_CANCELLED,
  kInternal = MSTAR_ERR_INTERNAL,
};

// The code's name, e.g. "INVALID_ARGUMENT". Unknown values read as "INTERNAL".
const char* CodeName(Code code);
// Maps a raw ABI code to Code; values outside the known set become kInternal.
Code CodeFromAbi(uint32_t raw);

// An OK status is a code and a null pointer: made, checked, moved and dropped on every step path
// in a few instructions. A message is kept on the heap, only by statuses that have one.
class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message)
      : code_(code),
        message_(message.empty() ? nullptr : std::make_unique<std::string>(std::move(message))) {}
  Status(const Status& other) : code_(other.code_), message_(CopyOf(other.message_)) {}
  Status& operator=(const Status& other) {
    if (this != &other) {
      code_ = other.code_;
      message_ = CopyOf(other.message_);
    }
    return *this;
  }
  Status(Status&& other) noexcept = default;
  Status& operator=(Status&& other) noexcept = default;

  static Status Ok() { return Status(); }

  // Predicted true: a failure's path is laid out away from the success path (with the cold
  // factories below, the step path's code stays dense in the instruction cache).
  bool ok() const { return __builtin_expect(code_ == Code::kOk, 1) != 0; }
  Code code() const { return code_; }
  // Empty for OK (and for an error made without a message).
  const std::string& message() const { return message_ != nullptr ? *message_ : EmptyMessage(); }
  // "CODE_NAME: message", or "OK".
  std::string ToString() const;
  // The same status with "context: " in front of the message.
  [[gnu::cold]] Status WithContext(std::string_view context) const;

 private:
  static std::unique_ptr<std::string> CopyOf(const std::unique_ptr<std::string>& message) {
    return message != nullptr ? std::make_unique<std::string>(*message) : nullptr;
  }
  static const std::string& EmptyMessage();

  Code code_ = Code::kOk;
  std::unique_ptr<std::string> message_;  // null: no message
};

[[gnu::cold]] Status InvalidArgument(std::string message);
[[gnu::cold]] Status NotFound(std::string message);
[[gnu::cold]] Status AlreadyExists(std::string message);
[[gnu::cold]] Status Unsupported(std::string message);
[[gnu::cold]] Status Unavailable(std::string message);
[[gnu::cold]] Status ResourceExhausted(std::string message);
[[gnu::cold]] Status FailedPrecondition(std::string message);
[[gnu::cold]] Status Incompatible(std::string message);
[[gnu::cold]] Status IoError(std::string message);
[[gnu::cold]] Status DataLoss(std::string message);
[[gnu::cold]] Status Internal(std::string message);

// A value or the error that prevented it.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  // A failure. An OK status here is the caller's bug: it reads as INTERNAL, never as a Result
  // with neither a value nor an error (whose OK status a caller would pass on as success).
  Result(Status status)  // NOLINT: implicit by design
      : status_(status.ok() ? Internal("a Result was made from an OK status") : std::move(status)) {
  }

  bool ok() const { return __builtin_expect(value_.has_value(), 1) != 0; }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

[[noreturn]] void CheckFailed(const char* file, int line, const char* condition);

}  // namespace mstar

// Aborts with the condition's text when it is false. For invariants only, never for input.
#define MSTAR_CHECK(condition) \
  ((condition) ? (void)0 : ::mstar::CheckFailed(__FILE__, __LINE__, #condition))

#define MSTAR_CONCAT_INNER(a, b) a##b
#define MSTAR_CONCAT(a, b) MSTAR_CONCAT_INNER(a, b)

#define MSTAR_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::mstar::Status mstar_status_ = (expr);        \
    if (!mstar_status_.ok()) return mstar_status_; \
  } while (0)

#define MSTAR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

#define MSTAR_ASSIGN_OR_RETURN(lhs, expr) \
  MSTAR_ASSIGN_OR_RETURN_IMPL(MSTAR_CONCAT(mstar_result_, __LINE__), lhs, expr)
