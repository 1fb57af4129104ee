// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The CPU device backend: aligned heap memory, memcpy, and streams whose work has always
// completed (work is executed inline by the thread that enqueues it).
#include "device/cpu_backend.h"

#include <cstdlib>
#include <cstring>

namespace mstar {

Result<void*> CpuBackend::Allocate(DLDevice device, uint64_t size, uint64_t alignment) {
  (void)device;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  if (size > UINT64_MAX - alignment) {  // rounding up would wrap
    return ResourceExhausted("host allocation of " + std::to_string(size) + " bytes failed");
  }
  uint64_t rounded = (size + alignment - 1) / alignment * alignment;
  if (rounded == 0) rounded = alignment;
  void* ptr = std::aligned_alloc(alignment, rounded);
  if (ptr == nullptr) {
    return ResourceExhausted("host allocation of " + std::to_string(size) + " bytes failed");
  }
  return ptr;
}

void CpuBackend::Free(DLDevice device, void* ptr) {
  (void)device;
  std::free(ptr);
}

Status CpuBackend::Copy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device,
                        uint64_t size, void* native_stream) {
  (void)native_stream;
  if (!IsHostDevice(dst_device) || !IsHostDevice(src_device)) {
    return Unsupported("copy between " + DeviceName(src_device) + " and " + DeviceName(dst_device) +
                       " needs a CUDA build");
  }
  if (size > 0) std::memmove(dst, src, size);
  return Status::Ok();
}

Result<void*> CpuBackend::CreateStream(DLDevice device, int32_t priority) {
  (void)device;
  (void)priority;
  return static_cast<void*>(nullptr);
}

void CpuBackend::DestroyStream(DLDevice device, void* native_stream) {
  (void)device;
  (void)native_stream;
}

Status CpuBackend::SynchronizeStream(DLDevice device, void* native_stream) {
  (void)device;
  (void)native_stream;
  return Status::Ok();
}

Result<void*> CpuBackend::CreateEvent(DLDevice device) {
  (void)device;
  return static_cast<void*>(nullptr);
}

void CpuBackend::DestroyEvent(DLDevice device, void* native_event) {
  (void)device;
  (void)native_event;
}

Status CpuBackend::RecordEvent(DLDevice device, void* native_event, void* native_stream) {
  (void)device;
  (void)native_event;
  (void)native_stream;
  return Status::Ok();
}

Status CpuBackend::StreamWaitEvent(void* native_stream, void* native_event) {
  (void)native_stream;
  (void)native_event;
  return Status::Ok();
}

Result<bool> CpuBackend::QueryEvent(void* native_event) {
  (void)native_event;
  return true;
}

Status CpuBackend::SynchronizeEvent(void* native_event) {
  (void)native_event;
  return Status::Ok();
}

}  // namespace mstar
