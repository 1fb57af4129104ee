// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
#include "engine/device_streams.h"

#include <algorithm>

#include "device/device.h"

namespace mstar {

Result<std::unique_ptr<DeviceStreams>> DeviceStreams::Create(DLDevice device) {
  // Host memory kinds (pinned or not) run on the CPU backend's inline streams.
  const DLDevice backend_device = IsHostDevice(device) ? DLDevice{kDLCPU, 0} : device;
  MSTAR_ASSIGN_OR_RETURN(DeviceBackend * backend, BackendFor(backend_device));
  return CreateOn(backend_device, backend);
}

Result<std::unique_ptr<DeviceStreams>> DeviceStreams::CreateOn(DLDevice device,
                                                               DeviceBackend* backend) {
  std::unique_ptr<DeviceStreams> streams(new DeviceStreams(device));
  streams->backend_ = backend;
  for (LaneState& lane : streams->lanes_) {
    lane.stream.device = device;
    lane.stream.backend = backend;
    // Created one by one: the destructor frees whatever was made before a failure.
    // Not `owned`: that marks a plugin's stream_create streams, which stream_release destroys.
    MSTAR_ASSIGN_OR_RETURN(lane.stream.native, backend->CreateStream(device, 0));
    MSTAR_ASSIGN_OR_RETURN(lane.event, backend->CreateEvent(device));
  }
  return streams;
}

DeviceStreams::~DeviceStreams() {
  for (LaneState& lane : lanes_) {
    if (lane.stream.native != nullptr) backend_->DestroyStream(device_, lane.stream.native);
    if (lane.event != nullptr) backend_->DestroyEvent(device_, lane.event);
  }
}

Status DeviceStreams::OrderAfter(mstar_stream* waiter, Lane lane) {
  LaneState& source = lanes_[lane];
  if (waiter == &source.stream) return Status::Ok();  // a stream is ordered after itself
  // Host work ran inline when it was given, so a device stream has nothing to wait for.
  if (IsHostDevice(device_) && !IsHostDevice(waiter->device)) return Status::Ok();
  std::lock_guard<std::mutex> lock(source.mutex);
  Waiter* seen = nullptr;  // counted lanes: what this waiter has ordered after
  if (lane != kExec) {
    auto it = std::find_if(source.waiters.begin(), source.waiters.end(),
                           [&](const Waiter& w) { return w.stream == waiter; });
    if (it == source.waiters.end()) it = source.waiters.insert(it, Waiter{waiter, 0});
    if (it->seen == source.given) return Status::Ok();  // nothing given since the last order
    seen = &*it;
  }
  MSTAR_RETURN_IF_ERROR(backend_->RecordEvent(device_, source.event, source.stream.native));
  Status status = IsHostDevice(waiter->device) && !IsHostDevice(device_)
                      ? backend_->SynchronizeEvent(source.event)
                      : waiter->backend->StreamWaitEvent(waiter->native, source.event);
  if (status.ok() && seen != nullptr) seen->seen = source.given;  // a failure orders again
  return status;
}

void DeviceStreams::Gave(Lane lane) {
  LaneState& state = lanes_[lane];
  std::lock_guard<std::mutex> lock(state.mutex);
  ++state.given;
}

Status DeviceStreams::Synchronize(Lane lane) {
  return backend_->SynchronizeStream(device_, lanes_[lane].stream.native);
}

}  // namespace mstar
