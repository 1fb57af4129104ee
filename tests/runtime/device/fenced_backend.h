// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// FencedBackend: host memory (the CPU backend's) with fences the test completes by hand, for
// checking when DeviceBlockCache reuses a freed block. Each RecordFence makes fence number n
// (from 1); it is done once the test has called Complete(n) or a later number. It also counts live
// blocks and stray frees, and can run out of memory (limit), refuse fences (capturing), name a
// thread as the one capturing a graph (capturing_thread), or fail when a fence is asked about
// (fail_queries). CachesFreedBlocks is true for every device, so a ledger that allocates
// through it keeps a DeviceBlockCache over it: when installed for the host's devices
// (SetHostBackendForTesting), allocate through a MemoryLedger of the test's own, destroyed before
// the backend, never through MemoryLedger::Global().
//
// Threading: thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "device/cpu_backend.h"
#include "device/device.h"

namespace mstar::test {

class FencedBackend final : public DeviceBackend {
 public:
  // Settings, read on each call.
  uint64_t limit = 0;  // bytes that may be live at once (0: no limit)
  bool capturing = false;
  bool fail_queries = false;
  std::thread::id capturing_thread;  // the thread that captures a graph (none by default)

  // Completes every fence numbered up to n.
  void Complete(uint64_t n) {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_ = n;
  }
  // Completes every fence recorded so far.
  void CompleteAll() {
    std::lock_guard<std::mutex> lock(mutex_);
    completed_ = fences_;
  }
  uint64_t fences() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return fences_;
  }
  uint64_t allocations() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocations_;
  }
  uint64_t live_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_bytes_;
  }
  size_t live_blocks() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.size();
  }
  // Frees of pointers that were not live (double frees, or blocks never allocated here).
  uint64_t stray_frees() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stray_frees_;
  }

  Result<void*> Allocate(DLDevice device, uint64_t size, uint64_t alignment) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (limit != 0 && live_bytes_ + size > limit) {
        return ResourceExhausted("fenced backend: " + std::to_string(live_bytes_) + " of " +
                                 std::to_string(limit) + " bytes live");
      }
    }
    MSTAR_ASSIGN_OR_RETURN(void* ptr, cpu_.Allocate(device, size, alignment));
    std::lock_guard<std::mutex> lock(mutex_);
    live_[ptr] = size;
    live_bytes_ += size;
    ++allocations_;
    return ptr;
  }
  void Free(DLDevice device, void* ptr) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = live_.find(ptr);
      if (it == live_.end()) {
        ++stray_frees_;
        return;
      }
      live_bytes_ -= it->second;
      live_.erase(it);
    }
    cpu_.Free(device, ptr);
  }
  bool CachesFreedBlocks(DLDevice) const override { return true; }
  bool CapturesOnThisThread() const override {
    return std::this_thread::get_id() == capturing_thread;
  }
  Result<std::unique_ptr<DeviceFence>> RecordFence(DLDevice) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (capturing) return Unavailable("fenced backend: capturing");
    return std::unique_ptr<DeviceFence>(std::make_unique<Fence>(this, ++fences_));
  }

  Status Copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device, uint64_t size,
              void* native_stream) override {
    return cpu_.Copy(dst, dst_device, src, src_device, size, native_stream);
  }
  Result<void*> CreateStream(DLDevice device, int32_t priority) override {
    return cpu_.CreateStream(device, priority);
  }
  void DestroyStream(DLDevice device, void* stream) override { cpu_.DestroyStream(device, stream); }
  Status SynchronizeStream(DLDevice device, void* stream) override {
    return cpu_.SynchronizeStream(device, stream);
  }
  Result<void*> CreateEvent(DLDevice device) override { return cpu_.CreateEvent(device); }
  void DestroyEvent(DLDevice device, void* event) override { cpu_.DestroyEvent(device, event); }
  Status RecordEvent(DLDevice device, void* event, void* stream) override {
    return cpu_.RecordEvent(device, event, stream);
  }
  Status StreamWaitEvent(void* stream, void* event) override {
    return cpu_.StreamWaitEvent(stream, event);
  }
  Result<bool> QueryEvent(void* event) override { return cpu_.QueryEvent(event); }
  Status SynchronizeEvent(void* event) override { return cpu_.SynchronizeEvent(event); }

 private:
  class Fence final : public DeviceFence {
   public:
    Fence(FencedBackend* backend, uint64_t number) : backend_(backend), number_(number) {}
    Result<bool> Done() override {
      std::lock_guard<std::mutex> lock(backend_->mutex_);
      if (backend_->fail_queries) return Internal("fenced backend: query failed");
      if (backend_->capturing) return false;
      return backend_->completed_ >= number_;
    }

   private:
    FencedBackend* backend_;
    uint64_t number_;
  };

  CpuBackend cpu_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, uint64_t> live_;
  uint64_t live_bytes_ = 0;
  uint64_t allocations_ = 0;
  uint64_t fences_ = 0;
  uint64_t completed_ = 0;
  uint64_t stray_frees_ = 0;
};

}  // namespace mstar::test
