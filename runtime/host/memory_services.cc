// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Accounted memory for plugins, and copies between memories.
#include <fmt/format.h>

#include "core/logging.h"
#include "device/device.h"
#include "host/host_api.h"
#include "host/host_objects.h"
#include "host/memory_ledger.h"
#include "host/services.h"

namespace mstar {
namespace {

mstar_status_t* MemoryAlloc(mstar_host_context_t* context, DLDevice device, uint64_t size,
                            uint64_t alignment, uint32_t flags, void** out_ptr) {
  try {
    Result<void*> ptr = MemoryLedger::Global().Allocate(context, device, size, alignment,
                                                        (flags & MSTAR_MEMORY_PINNED) != 0);
    if (!ptr.ok()) return MakeAbiStatus(ptr.status());
    *out_ptr = ptr.value();
  } catch (const std::bad_alloc& error) {  // the ledger's own records: none crosses the ABI
    return BadAllocStatus("memory_alloc", error);
  }
  return nullptr;
}

void MemoryFree(mstar_host_context_t* context, void* ptr) {
  if (ptr == nullptr) return;
  Status status = MemoryLedger::Global().FreeForOwner(ptr, context);
  if (!status.ok()) {
    Log().error("[{}] memory_free({}): {}", context != nullptr ? context->label : "?", ptr,
                status.message());
  }
}

mstar_status_t* MemoryUsage(mstar_host_context_t* context, DLDevice device, uint64_t* out_used,
                            uint64_t* out_limit) {
  *out_used = MemoryLedger::Global().UsedBy(context, device);
  *out_limit = MemoryLedger::Global().Limit(device);
  return nullptr;
}

// Runs copy(backend, native stream) on the backend of the copy's device side and returns its
// status as an ABI status. Both sides host memory: the host backend copies at once, so a device
// stream is synchronized first (what it was given before, say a device-to-host copy into src,
// has run) and the copy is then done when the call returns, before anything given to the stream
// later: ordered on the stream, as memory_copy promises.
template <typename CopyFn>
mstar_status_t* OnCopyBackend(DLDevice dst_device, DLDevice src_device, mstar_stream_t* stream,
                              CopyFn&& copy) {
  const bool host_only = IsHostDevice(dst_device) && IsHostDevice(src_device);
  const DLDevice side = host_only                  ? DLDevice{kDLCPU, 0}
                        : IsHostDevice(dst_device) ? src_device
                                                   : dst_device;
  Result<DeviceBackend*> backend = BackendFor(side);
  if (!backend.ok()) return MakeAbiStatus(backend.status());
  void* native = stream != nullptr ? stream->native : nullptr;
  if (host_only) {
    Status synced = WaitForStream(stream);
    if (!synced.ok()) return MakeAbiStatus(synced.WithContext("memory_copy between host memories"));
    native = nullptr;
  }
  Status status = copy(*backend.value(), native);
  return status.ok() ? nullptr : MakeAbiStatus(status);
}

mstar_status_t* MemoryCopy(void* dst, DLDevice dst_device, const void* src, DLDevice src_device,
                           uint64_t size, mstar_stream_t* stream) {
  return OnCopyBackend(dst_device, src_device, stream, [&](DeviceBackend& backend, void* native) {
    return backend.Copy(dst, dst_device, src, src_device, size, native);
  });
}

mstar_status_t* MemoryCopy2D(void* dst, uint64_t dst_pitch, DLDevice dst_device, const void* src,
                             uint64_t src_pitch, DLDevice src_device, uint64_t width,
                             uint64_t height, mstar_stream_t* stream) {
  if (height > 1 && (dst_pitch < width || src_pitch < width)) {
    return MakeAbiStatus(InvalidArgument(fmt::format(
        "memory_copy_2d: pitches (dst {}, src {}) must be at least the width ({} bytes)", dst_pitch,
        src_pitch, width)));
  }
  return OnCopyBackend(dst_device, src_device, stream, [&](DeviceBackend& backend, void* native) {
    return backend.Copy2D(dst, dst_pitch, dst_device, src, src_pitch, src_device, width, height,
                          native);
  });
}

}  // namespace

Status WaitForStream(mstar_stream_t* stream) {
  if (stream == nullptr || stream->backend == nullptr || IsHostDevice(stream->device))
    return Status::Ok();
  return stream->backend->SynchronizeStream(stream->device, stream->native);
}

mstar_status_t* CopyMemory(void* dst, DLDevice dst_device, const void* src, DLDevice src_device,
                           uint64_t size, mstar_stream_t* stream) {
  return MemoryCopy(dst, dst_device, src, src_device, size, stream);
}

void InstallMemoryServices(mstar_host_api_t& table) {
  table.memory_alloc = &MemoryAlloc;
  table.memory_free = &MemoryFree;
  table.memory_usage = &MemoryUsage;
  table.memory_copy = &MemoryCopy;
  table.memory_copy_2d = &MemoryCopy2D;
}

}  // namespace mstar
