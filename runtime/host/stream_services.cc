// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Streams and events for plugins, over the device layer.
#include <new>
#include <string>

#include "core/fault_injection.h"
#include "core/logging.h"
#include "device/device.h"
#include "host/host_api.h"
#include "host/host_objects.h"
#include "host/services.h"

namespace mstar {
namespace {

mstar_status_t* Fail(const Status& status) {
  return status.ok() ? nullptr : MakeAbiStatus(status);
}

// Streams and events of host memory (pinned included) are the CPU backend's, inline and always
// idle, as the engine's are (DeviceStreams): a host copy waits for no stream (WaitForStream), so
// a host stream must hold no device work.
DLDevice BackendDevice(DLDevice device) {
  return IsHostDevice(device) ? DLDevice{kDLCPU, 0} : device;
}

mstar_status_t* StreamCreate(mstar_host_context_t* context, DLDevice requested, int32_t priority,
                             mstar_stream_t** out_stream) {
  (void)context;
  const DLDevice device = BackendDevice(requested);
  Result<DeviceBackend*> backend = BackendFor(device);
  if (!backend.ok()) return Fail(backend.status());
  Result<void*> native = backend.value()->CreateStream(device, priority);
  if (!native.ok()) return Fail(native.status());
  try {
    MaybeFailHostObject();
    *out_stream = new mstar_stream{device, native.value(), true, backend.value()};
  } catch (const std::bad_alloc& error) {
    if (native.value() != nullptr) backend.value()->DestroyStream(device, native.value());
    return BadAllocStatus("stream_create", error);
  }
  return nullptr;
}

void StreamRelease(mstar_stream_t* stream) {
  if (stream == nullptr) return;
  if (!stream->owned) {
    Log().error(
        "stream_release: the stream was lent by the host (to a hook), not made by "
        "stream_create; it stays the host's and is not released");
    return;
  }
  if (stream->native != nullptr) {
    stream->backend->DestroyStream(stream->device, stream->native);
  }
  delete stream;
}

mstar_status_t* NullEvent(const char* service) {
  return NewAbiStatus(MSTAR_ERR_INVALID_ARGUMENT,
                      (std::string(service) + ": the event is NULL").c_str());
}

// A NULL stream is the host's inline stream (mstar/host.h): CPU, no handle, always idle.
DLDevice StreamDevice(const mstar_stream_t* stream) {
  return stream != nullptr ? stream->device : DLDevice{kDLCPU, 0};
}

void* StreamNative(const mstar_stream_t* stream) {
  return stream != nullptr ? stream->native : nullptr;
}

mstar_status_t* StreamSynchronize(mstar_stream_t* stream) {
  if (stream == nullptr) return nullptr;
  return Fail(stream->backend->SynchronizeStream(stream->device, stream->native));
}

mstar_status_t* StreamWaitEvent(mstar_stream_t* stream, mstar_event_t* event) {
  if (event == nullptr) return NullEvent("stream_wait_event");
  if (stream == nullptr) return Fail(event->backend->SynchronizeEvent(event->native));
  // A stream cannot wait on the device for another backend's event (a host stream's later work
  // runs inline, at once): the host waits for the event instead.
  if (stream->backend != event->backend)
    return Fail(event->backend->SynchronizeEvent(event->native));
  return Fail(stream->backend->StreamWaitEvent(stream->native, event->native));
}

mstar_status_t* EventCreate(mstar_host_context_t* context, DLDevice requested,
                            mstar_event_t** out_event) {
  (void)context;
  const DLDevice device = BackendDevice(requested);
  Result<DeviceBackend*> backend = BackendFor(device);
  if (!backend.ok()) return Fail(backend.status());
  Result<void*> native = backend.value()->CreateEvent(device);
  if (!native.ok()) return Fail(native.status());
  try {
    MaybeFailHostObject();
    *out_event = new mstar_event{device, native.value(), backend.value()};
  } catch (const std::bad_alloc& error) {
    if (native.value() != nullptr) backend.value()->DestroyEvent(device, native.value());
    return BadAllocStatus("event_create", error);
  }
  return nullptr;
}

void EventRelease(mstar_event_t* event) {
  if (event == nullptr) return;
  if (event->native != nullptr) event->backend->DestroyEvent(event->device, event->native);
  delete event;
}

mstar_status_t* EventRecord(mstar_event_t* event, mstar_stream_t* stream) {
  if (event == nullptr) return NullEvent("event_record");
  if (stream == nullptr)
    return Fail(event->backend->RecordEvent(event->device, event->native, nullptr));
  // An event of another backend than the stream's cannot mark a point in that stream: the host
  // waits for the stream's work so far, and the event is recorded where it then completes at
  // once or after it (its backend's default stream), never before the stream's work.
  if (stream->backend != event->backend) {
    if (Status synced = stream->backend->SynchronizeStream(stream->device, stream->native);
        !synced.ok())
      return Fail(synced);
    return Fail(event->backend->RecordEvent(event->device, event->native, nullptr));
  }
  return Fail(event->backend->RecordEvent(event->device, event->native, stream->native));
}

mstar_status_t* EventQuery(mstar_event_t* event, uint32_t* out_done) {
  if (event == nullptr) return NullEvent("event_query");
  Result<bool> done = event->backend->QueryEvent(event->native);
  if (!done.ok()) return Fail(done.status());
  *out_done = done.value() ? 1u : 0u;
  return nullptr;
}

mstar_status_t* EventSynchronize(mstar_event_t* event) {
  if (event == nullptr) return NullEvent("event_synchronize");
  return Fail(event->backend->SynchronizeEvent(event->native));
}

}  // namespace

void InstallStreamServices(mstar_host_api_t& table) {
  table.stream_create = &StreamCreate;
  table.stream_release = &StreamRelease;
  table.stream_device = &StreamDevice;
  table.stream_native = &StreamNative;
  table.stream_synchronize = &StreamSynchronize;
  table.stream_wait_event = &StreamWaitEvent;
  table.event_create = &EventCreate;
  table.event_release = &EventRelease;
  table.event_record = &EventRecord;
  table.event_query = &EventQuery;
  table.event_synchronize = &EventSynchronize;
}

}  // namespace mstar
