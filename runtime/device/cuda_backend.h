// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "device/device.h"

namespace mstar {

// Makes a device current until the scope ends, then the one that was current before, so a
// caller working on another device (a plugin's kernels on cuda:1) keeps its own. A thread that
// never chose a device reads device 0 as current; making 0 current again would create its
// context (cudaSetDevice does since CUDA 12) on a GPU the process may never use, so a device
// without one is not made current again. Not thread-safe: one thread's scope, on its stack.
class CudaDeviceScope {
 public:
  CudaDeviceScope() = default;
  CudaDeviceScope(const CudaDeviceScope&) = delete;
  CudaDeviceScope& operator=(const CudaDeviceScope&) = delete;
  ~CudaDeviceScope();
  // Makes device current (host memory kinds need none). Fails when CUDA cannot say or set it.
  Status Enter(DLDevice device);

 private:
  int previous_ = -1;  // the device to make current again; -1: unchanged
};

// CUDA device memory, pinned host memory, streams and events through the CUDA runtime API.
// Thread-safe: every call makes the device it acts on current, and makes the caller's current
// device current again before it returns. It keeps the streams it made per device, so that a
// fence (RecordFence) can cover all of them; a stream leaves that set only once its work has
// finished, and fences record and ask under the lock that guards the set.
class CudaBackend final : public DeviceBackend {
 public:
  static CudaBackend& Instance();

  Result<void*> Allocate(DLDevice device, uint64_t size, uint64_t alignment) override;
  void Free(DLDevice device, void* ptr) override;
  bool CachesFreedBlocks(DLDevice device) const override { return device.device_type == kDLCUDA; }
  bool CapturesOnThisThread() const override;
  Result<std::unique_ptr<DeviceFence>> RecordFence(DLDevice device) override;
  Status Copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device, uint64_t size,
              void* native_stream) override;
  Status Copy2D(void* dst, uint64_t dst_pitch, DLDevice dst_device, const void* src,
                uint64_t src_pitch, DLDevice src_device, uint64_t width, uint64_t height,
                void* native_stream) override;
  Result<void*> CreateStream(DLDevice device, int32_t priority) override;
  void DestroyStream(DLDevice device, void* native_stream) override;
  Status SynchronizeStream(DLDevice device, void* native_stream) override;
  Result<void*> CreateEvent(DLDevice device) override;
  void DestroyEvent(DLDevice device, void* native_event) override;
  Status RecordEvent(DLDevice device, void* native_event, void* native_stream) override;
  Status StreamWaitEvent(void* native_stream, void* native_event) override;
  Result<bool> QueryEvent(void* native_event) override;
  Status SynchronizeEvent(void* native_event) override;

  // The runtime's graph captures on device_id (capture/cuda_graph_backend.cc) bracket each
  // capture with these, on the capturing thread, so that no fence is recorded on, or asked
  // about, a device while it captures (a fence records under the same lock that CaptureStarting
  // takes) and the capturing thread is known (CapturesOnThisThread). Captures begun by others
  // (a plugin's own) are seen through cudaStreamIsCapturing, without those guarantees.
  void CaptureStarting(int device_id);
  void CaptureEnded(int device_id);

  // An event of device_id (timing off) from the backend's idle ones, or a new one; GiveEvent takes
  // it back once nothing waits on it or asks about it any more (it may be recorded again).
  Result<void*> TakeEvent(int device_id);
  void GiveEvent(int device_id, void* event);

 private:
  class Fence;
  // Under mutex_: the streams made on device_id and its default stream (nullptr); whether the
  // device captures (a runtime capture under way, or one of those streams capturing as CUDA
  // says; device_id must be current, for its default stream).
  std::vector<void*> StreamsOfLocked(int device_id);
  bool CapturingLocked(int device_id);
  bool Capturing(int device_id);

  std::mutex mutex_;
  std::map<int, std::set<void*>> streams_;    // by device id
  std::map<int, std::vector<void*>> events_;  // idle fence events by device id
  std::map<int, int> captures_;               // runtime captures under way, by device id
};

}  // namespace mstar
