// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// StreamLogBackend: the CPU backend's memory and copies with streams and events that are told apart, and a log of
// what was done with them, for checking which stream the engine hands each hook and how it orders
// its streams. Installed for host devices while a StreamLogScope lives (SetHostBackendForTesting).
// Memory and copies work as on the CPU backend (inline); a copy also logs the stream it was given.
// Failures can be injected into stream waits and event creation.
//
// Threading: thread-safe (one mutex over the log and the handle names).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/cpu_backend.h"
#include "device/device.h"

namespace mstar::test {

enum class StreamOp { kCreateStream, kDestroyStream, kSync, kRecord, kWait, kSyncEvent, kCopy };

struct StreamLogEntry {
  StreamOp op;
  const void* stream = nullptr;  // the stream the op ran on (nullptr: the default stream)
  const void* event = nullptr;   // kRecord, kWait, kSyncEvent
};

class StreamLogBackend final : public DeviceBackend {
 public:
  // Fail every StreamWaitEvent / the n-th CreateEvent (counting from 1) with a kInternal status.
  bool fail_waits = false;
  int fail_event_number = 0;

  std::vector<StreamLogEntry> log() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return log_;
  }
  size_t live_streams() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_streams_;
  }
  // The stream the event was last recorded on (nullptr: never recorded).
  const void* recorded_on(const void* event) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = recorded_on_.find(event);
    return it == recorded_on_.end() ? nullptr : it->second;
  }

  Result<void*> Allocate(DLDevice device, uint64_t size, uint64_t alignment) override {
    return cpu_.Allocate(device, size, alignment);
  }
  void Free(DLDevice device, void* ptr) override { cpu_.Free(device, ptr); }
  Status Copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device, uint64_t size,
              void* native_stream) override {
    Append({StreamOp::kCopy, native_stream, nullptr});
    return cpu_.Copy(dst, dst_device, src, src_device, size, native_stream);
  }
  Result<void*> CreateStream(DLDevice, int32_t) override {
    void* stream = NewHandle();
    std::lock_guard<std::mutex> lock(mutex_);
    ++live_streams_;
    log_.push_back({StreamOp::kCreateStream, stream, nullptr});
    return stream;
  }
  void DestroyStream(DLDevice, void* native_stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (native_stream != nullptr) --live_streams_;
    log_.push_back({StreamOp::kDestroyStream, native_stream, nullptr});
  }
  Status SynchronizeStream(DLDevice, void* native_stream) override {
    Append({StreamOp::kSync, native_stream, nullptr});
    return Status::Ok();
  }
  Result<void*> CreateEvent(DLDevice) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (++events_made_ == fail_event_number) return Internal("injected: no events left");
    }
    return NewHandle();
  }
  void DestroyEvent(DLDevice, void*) override {}
  Status RecordEvent(DLDevice, void* native_event, void* native_stream) override {
    std::lock_guard<std::mutex> lock(mutex_);
    recorded_on_[native_event] = native_stream;
    log_.push_back({StreamOp::kRecord, native_stream, native_event});
    return Status::Ok();
  }
  Status StreamWaitEvent(void* native_stream, void* native_event) override {
    if (fail_waits) return Internal("injected: the stream cannot wait");
    Append({StreamOp::kWait, native_stream, native_event});
    return Status::Ok();
  }
  Result<bool> QueryEvent(void*) override { return true; }
  Status SynchronizeEvent(void* native_event) override {
    Append({StreamOp::kSyncEvent, nullptr, native_event});
    return Status::Ok();
  }

 private:
  void Append(StreamLogEntry entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    log_.push_back(entry);
  }
  // Distinct non-null handles; never dereferenced.
  void* NewHandle() {
    std::lock_guard<std::mutex> lock(mutex_);
    handles_.push_back(std::make_unique<char>());
    return handles_.back().get();
  }

  CpuBackend cpu_;
  mutable std::mutex mutex_;
  std::vector<StreamLogEntry> log_;
  std::vector<std::unique_ptr<char>> handles_;
  std::map<const void*, const void*> recorded_on_;
  size_t live_streams_ = 0;
  int events_made_ = 0;
};

// Installs backend for host devices for the scope's life.
class StreamLogScope {
 public:
  explicit StreamLogScope(StreamLogBackend& backend) { SetHostBackendForTesting(&backend); }
  ~StreamLogScope() { SetHostBackendForTesting(nullptr); }
  StreamLogScope(const StreamLogScope&) = delete;
  StreamLogScope& operator=(const StreamLogScope&) = delete;
};

}  // namespace mstar::test
