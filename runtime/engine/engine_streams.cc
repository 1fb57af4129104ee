// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The engine's streams: one DeviceStreams per device a node or resource is on, and the orderings
// between a node's exec stream and its resources' plan and copy streams (engine.h).
#include <algorithm>

#include "device/device.h"
#include "engine/engine.h"

namespace mstar {
namespace {

DLDevice NodeDevice(const NodeRuntime& node) {
  return node.spec != nullptr ? node.spec->device : DLDevice{kDLCPU, 0};
}

// Host memory kinds share the CPU backend's streams.
bool SameStreams(DLDevice a, DLDevice b) {
  return (IsHostDevice(a) && IsHostDevice(b)) || SameDevice(a, b);
}

}  // namespace

Status Engine::CreateStreams() {
  std::vector<DLDevice> devices;
  for (auto& node : runtime_->nodes()) devices.push_back(NodeDevice(*node));
  for (auto& resource : runtime_->resources()) devices.push_back(resource->device);
  for (DLDevice device : devices) {
    if (streams_on(device) != nullptr) continue;
    Result<std::unique_ptr<DeviceStreams>> streams = DeviceStreams::Create(device);
    if (!streams.ok()) {
      return streams.status().WithContext("creating the engine's streams on " + DeviceName(device));
    }
    device_streams_.push_back(std::move(streams).value());
  }
  // Per node, once: its device's streams, then its resources' devices' (each once).
  for (auto& node : runtime_->nodes()) {
    std::vector<DeviceStreams*> sources{streams_on(NodeDevice(*node))};
    for (const ResourceRuntime* resource : node->resources) {
      DeviceStreams* streams = streams_on(resource->device);
      if (std::find(sources.begin(), sources.end(), streams) == sources.end()) {
        sources.push_back(streams);
      }
    }
    node_streams_.push_back(std::move(sources));
  }
  for (auto& node : runtime_->nodes()) {
    for (const ResourceRuntime* resource : node->resources) {
      std::vector<DeviceStreams*>& users = resource_users_[resource];
      DeviceStreams* streams = &NodeStreams(*node);
      if (std::find(users.begin(), users.end(), streams) == users.end()) users.push_back(streams);
    }
  }
  return Status::Ok();
}

DeviceStreams* Engine::streams_on(DLDevice device) {
  for (auto& streams : device_streams_) {
    if (SameStreams(streams->device(), device)) return streams.get();
  }
  return nullptr;
}

DeviceStreams& Engine::NodeStreams(const NodeRuntime& node) {
  return *node_streams_[static_cast<size_t>(node.index)].front();
}

DeviceStreams& Engine::ResourceStreams(const ResourceRuntime& resource) {
  return *streams_on(resource.device);
}

Status Engine::ExecAfterPlansAndCopies(NodeRuntime& node) {
  const std::vector<DeviceStreams*>& sources = node_streams_[static_cast<size_t>(node.index)];
  mstar_stream* exec = sources.front()->exec();
  for (DeviceStreams* streams : sources) {
    MSTAR_RETURN_IF_ERROR(streams->OrderAfter(exec, DeviceStreams::kPlan));
    MSTAR_RETURN_IF_ERROR(streams->OrderAfter(exec, DeviceStreams::kCopy));
  }
  return Status::Ok();
}

Status Engine::CopyAfterExec(const ResourceRuntime& resource) {
  auto users = resource_users_.find(&resource);
  if (users == resource_users_.end()) return Status::Ok();  // no node uses it
  mstar_stream* copy = ResourceStreams(resource).copy();
  for (DeviceStreams* streams : users->second) {
    MSTAR_RETURN_IF_ERROR(streams->OrderAfter(copy, DeviceStreams::kExec));
  }
  return Status::Ok();
}

Status Engine::FinishExec(NodeRuntime& node) {
  Status status = NodeStreams(node).Synchronize(DeviceStreams::kExec);
  if (!status.ok()) return status.WithContext("waiting for " + node.instance->label() + "'s step");
  return status;
}

}  // namespace mstar
