// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#pragma once

#include "device/device.h"

namespace mstar {

// Host memory and inline execution. Stateless, so thread-safe.
class CpuBackend final : public DeviceBackend {
 public:
  Result<void*> Allocate(DLDevice device, uint64_t size, uint64_t alignment) override;
  void Free(DLDevice device, void* ptr) override;
  Status Copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device, uint64_t size,
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
};

}  // namespace mstar
