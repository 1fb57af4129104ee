// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The device layer: raw memory, copies, streams and events, behind one interface per device type.
// The CPU backend runs everything inline (a stream is always idle; an event completes when
// recorded). The CUDA backend wraps the CUDA runtime API and exists only in CUDA builds. The
// runtime never links LibTorch: this is all the device access it has.
//
// Threading: every method is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <dlpack/dlpack.h>

#include "core/status.h"

namespace mstar {

// A device handle as the runtime names it. kDLCPU / kDLCUDAHost are host memory (the latter
// pinned); kDLCUDA is device memory.
std::string DeviceName(DLDevice device);
bool IsHostDevice(DLDevice device);
bool SameDevice(DLDevice a, DLDevice b);

// A point in a device's work (DeviceBackend::RecordFence): done once everything enqueued on the
// device before it was recorded has finished. Thread-compatible: one owner at a time.
class DeviceFence {
 public:
  virtual ~DeviceFence() = default;
  // Whether the work has finished; false too while the answer cannot be asked for (a stream of
  // the device is being captured into a graph).
  virtual Result<bool> Done() = 0;
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // Allocates size bytes aligned to alignment (a power of two). kResourceExhausted when the
  // device is out of memory.
  virtual Result<void*> Allocate(DLDevice device, uint64_t size, uint64_t alignment) = 0;
  // Frees ptr; safe while work enqueued before the call may still use it (the CUDA backend's
  // cudaFree waits for the whole device, which is why freed device blocks are cached,
  // device/block_cache.h).
  virtual void Free(DLDevice device, void* ptr) = 0;
  // Whether the host should keep freed blocks of device for reuse (DeviceBlockCache) rather
  // than give each back with Free: true where Allocate and Free are costly or synchronize.
  virtual bool CachesFreedBlocks(DLDevice device) const {
    (void)device;
    return false;
  }
  // Whether the calling thread is capturing a graph on one of this backend's streams: memory it
  // is handed now would be baked into the graph, which replays into it after it was freed, so
  // the host hands it none (DeviceBlockCache::Allocate).
  virtual bool CapturesOnThisThread() const { return false; }
  // A fence over the work enqueued so far on device: on every stream this backend made for it,
  // and on its default stream. nullptr when that work has finished already (the CPU backend
  // runs everything inline). kUnavailable while a stream of the device is being captured into a
  // graph (a fence cannot be recorded or asked about then).
  virtual Result<std::unique_ptr<DeviceFence>> RecordFence(DLDevice device) {
    (void)device;
    return std::unique_ptr<DeviceFence>();
  }
  // Copies size bytes; with a null stream the copy has finished on return.
  virtual Status Copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device,
                      uint64_t size, void* native_stream) = 0;
  // Copies height rows of width bytes, pitches apart (host memory_copy_2d); this default issues
  // one Copy per row, a backend with a strided copy overrides it.
  virtual Status Copy2D(void* dst, uint64_t dst_pitch, DLDevice dst_device, const void* src,
                        uint64_t src_pitch, DLDevice src_device, uint64_t width, uint64_t height,
                        void* native_stream);

  // Native stream and event handles (nullptr on CPU).
  virtual Result<void*> CreateStream(DLDevice device, int32_t priority) = 0;
  virtual void DestroyStream(DLDevice device, void* native_stream) = 0;
  virtual Status SynchronizeStream(DLDevice device, void* native_stream) = 0;
  virtual Result<void*> CreateEvent(DLDevice device) = 0;
  virtual void DestroyEvent(DLDevice device, void* native_event) = 0;
  // device: the event's, whose default stream a null native_stream names.
  virtual Status RecordEvent(DLDevice device, void* native_event, void* native_stream) = 0;
  virtual Status StreamWaitEvent(void* native_stream, void* native_event) = 0;
  virtual Result<bool> QueryEvent(void* native_event) = 0;
  virtual Status SynchronizeEvent(void* native_event) = 0;
};

// The backend for device (CPU for host devices, CUDA for kDLCUDA in CUDA builds); kUnsupported
// for device types this build does not have.
Result<DeviceBackend*> BackendFor(DLDevice device);

// Tests only: BackendFor answers backend for the devices the CPU backend serves (nullptr
// restores the CPU backend), so a test can watch or fail the host's streams and events. Set it
// before anything is made through BackendFor and restore it once all of that is gone; backend
// must do what the CPU backend does with memory and copies.
void SetHostBackendForTesting(DeviceBackend* backend);

// Number of CUDA devices visible (0 on CPU builds or without a driver).
int CudaDeviceCount();

}  // namespace mstar
