// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Errors in plugin code: throw mstar::sdk::Error (or any std::exception); the SDK's barrier
// around every ABI entry turns it into a host status, so no exception ever crosses into the host.
#pragma once

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "mstar/plugin.h"

namespace mstar::sdk {

// The name of an ABI status code (mstar/status.h), for messages: "DATA_LOSS", ...; "error" for a
// code this SDK does not know.
inline const char* ErrorCodeName(uint32_t code) {
  switch (code) {
    case MSTAR_OK: return "OK";
    case MSTAR_ERR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case MSTAR_ERR_NOT_FOUND: return "NOT_FOUND";
    case MSTAR_ERR_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case MSTAR_ERR_UNSUPPORTED: return "UNSUPPORTED";
    case MSTAR_ERR_UNAVAILABLE: return "UNAVAILABLE";
    case MSTAR_ERR_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case MSTAR_ERR_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case MSTAR_ERR_INCOMPATIBLE: return "INCOMPATIBLE";
    case MSTAR_ERR_IO: return "IO";
    case MSTAR_ERR_DATA_LOSS: return "DATA_LOSS";
    case MSTAR_ERR_CANCELLED: return "CANCELLED";
    case MSTAR_ERR_INTERNAL: return "INTERNAL";
    default: return "error";
  }
}

// An error with an ABI code (mstar/status.h) and a message for the person reading the log.
class Error : public std::exception {
 public:
  Error(uint32_t code, std::string message) : code_(code), message_(std::move(message)) {}
  uint32_t code() const noexcept { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& message() const noexcept { return message_; }

 private:
  uint32_t code_;
  std::string message_;
};

inline Error InvalidArgument(std::string message) {
  return Error(MSTAR_ERR_INVALID_ARGUMENT, std::move(message));
}
inline Error NotFound(std::string message) {
  return Error(MSTAR_ERR_NOT_FOUND, std::move(message));
}
inline Error Unsupported(std::string message) {
  return Error(MSTAR_ERR_UNSUPPORTED, std::move(message));
}
inline Error ResourceExhausted(std::string message) {
  return Error(MSTAR_ERR_RESOURCE_EXHAUSTED, std::move(message));
}
inline Error FailedPrecondition(std::string message) {
  return Error(MSTAR_ERR_FAILED_PRECONDITION, std::move(message));
}
inline Error Internal(std::string message) {
  return Error(MSTAR_ERR_INTERNAL, std::move(message));
}

namespace detail {

// The host table of this plugin library, set by the entry point before anything else runs.
inline const mstar_host_api_t*& HostTable() {
  static const mstar_host_api_t* table = nullptr;
  return table;
}

}  // namespace detail

// Writes value into a struct the host provided, within the size the host declared and keeping the
// host's struct_size and struct_version (mstar/abi.h, "Structs").
template <typename Struct>
void WriteOut(Struct* out, const Struct& value) {
  uint32_t size = out->struct_size;
  uint32_t version = out->struct_version;
  std::memcpy(static_cast<void*>(out), &value, std::min<size_t>(size, sizeof(Struct)));
  out->struct_size = size;
  out->struct_version = version;
}

// Owns a status the host handed over, and releases it when destroyed.
class OwnedStatus {
 public:
  OwnedStatus(const mstar_host_api_t* host, mstar_status_t* status)
      : host_(host), status_(status) {}
  OwnedStatus(OwnedStatus&& other) noexcept : host_(other.host_), status_(other.status_) {
    other.status_ = nullptr;
  }
  OwnedStatus& operator=(OwnedStatus&& other) noexcept {
    if (this != &other) {
      host_->status_release(status_);
      host_ = other.host_;
      status_ = other.status_;
      other.status_ = nullptr;
    }
    return *this;
  }
  OwnedStatus(const OwnedStatus&) = delete;
  OwnedStatus& operator=(const OwnedStatus&) = delete;
  ~OwnedStatus() { host_->status_release(status_); }

  bool ok() const { return status_ == nullptr; }
  uint32_t code() const { return host_->status_code(status_); }
  std::string message() const { return host_->status_message(status_); }
  // Gives the status up (to return it to the host).
  mstar_status_t* release() {
    mstar_status_t* out = status_;
    status_ = nullptr;
    return out;
  }

 private:
  const mstar_host_api_t* host_;
  mstar_status_t* status_;
};

// Throws Error when status (transferred) is an error; releases it either way.
inline void Check(const mstar_host_api_t* host, mstar_status_t* status) {
  OwnedStatus owned(host, status);
  if (!owned.ok()) throw Error(owned.code(), owned.message());
}

// Runs body and converts whatever it throws into a host status (NULL on success). Every function
// the SDK puts into an ABI table goes through here.
template <typename Body>
mstar_status_t* Guard(const mstar_host_api_t* host, Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const Error& e) {
    return host->status_new(e.code() == MSTAR_OK ? MSTAR_ERR_INTERNAL : e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return host->status_new(MSTAR_ERR_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return host->status_new(MSTAR_ERR_INTERNAL, e.what());
  } catch (...) {
    return host->status_new(MSTAR_ERR_INTERNAL, "unknown exception");
  }
}

// Runs body for a hook that cannot report errors (destroy, cleanup): exceptions are logged as
// "<hook>: <what>" (hook: a static string naming it, e.g. "cleanup_request").
template <typename Body>
void GuardVoid(const mstar_host_api_t* host, mstar_host_context_t* context, const char* hook,
               Body&& body) noexcept {
  mstar_status_t* status = Guard(host, std::forward<Body>(body));
  if (status == nullptr) return;
  try {
    const std::string message = std::string(hook) + ": " + host->status_message(status);
    host->log(context, MSTAR_LOG_ERROR, nullptr, 0, message.c_str());
  } catch (...) {  // out of memory for the message: the reason alone
    host->log(context, MSTAR_LOG_ERROR, nullptr, 0, host->status_message(status));
  }
  host->status_release(status);
}

}  // namespace mstar::sdk
