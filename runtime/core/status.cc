// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "core/status.h"

#include <cstdio>
#include <cstdlib>

namespace mstar {

const char* CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "INVALID_ARGUMENT";
    case Code::kNotFound: return "NOT_FOUND";
    case Code::kAlreadyExists: return "ALREADY_EXISTS";
    case Code::kUnsupported: return "UNSUPPORTED";
    case Code::kUnavailable: return "UNAVAILABLE";
    case Code::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case Code::kFailedPrecondition: return "FAILED_PRECONDITION";
    case Code::kIncompatible: return "INCOMPATIBLE";
    case Code::kIo: return "IO_ERROR";
    case Code::kDataLoss: return "DATA_LOSS";
    case Code::kCancelled: return "CANCELLED";
    case Code::kInternal: return "INTERNAL";
  }
  return "INTERNAL";
}

Code CodeFromAbi(uint32_t raw) {
  if (raw >= MSTAR_STATUS_CODE_COUNT) return Code::kInternal;
  return static_cast<Code>(raw);
}

const std::string& Status::EmptyMessage() {
  static const std::string empty;
  return empty;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message();
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message());
}

Status InvalidArgument(std::string message) {
  return {Code::kInvalidArgument, std::move(message)};
}
Status NotFound(std::string message) {
  return {Code::kNotFound, std::move(message)};
}
Status AlreadyExists(std::string message) {
  return {Code::kAlreadyExists, std::move(message)};
}
Status Unsupported(std::string message) {
  return {Code::kUnsupported, std::move(message)};
}
Status Unavailable(std::string message) {
  return {Code::kUnavailable, std::move(message)};
}
Status ResourceExhausted(std::string message) {
  return {Code::kResourceExhausted, std::move(message)};
}
Status FailedPrecondition(std::string message) {
  return {Code::kFailedPrecondition, std::move(message)};
}
Status Incompatible(std::string message) {
  return {Code::kIncompatible, std::move(message)};
}
Status IoError(std::string message) {
  return {Code::kIo, std::move(message)};
}
Status DataLoss(std::string message) {
  return {Code::kDataLoss, std::move(message)};
}
Status Internal(std::string message) {
  return {Code::kInternal, std::move(message)};
}

void CheckFailed(const char* file, int line, const char* condition) {
  std::fprintf(stderr, "%s:%d: internal check failed: %s\n", file, line, condition);
  std::abort();
}

}  // namespace mstar
