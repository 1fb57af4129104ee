// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The engine's memory-pressure and cross-worker operations over a node's resources: readiness,
// offload and reload, eviction figures, publishing, and resident deltas for follower ranks.
#include "engine/engine.h"

#include <algorithm>

#include "core/logging.h"
#include "plugin/slots.h"

namespace mstar {
namespace {

// Whether the host may offload the resource: it declares MSTAR_RESOURCE_EVICTABLE (the SDK fills
// the offload slots whenever a class overrides them, declared or not).
bool Offloads(const ResourceRuntime& resource) {
  return (resource.flags & MSTAR_RESOURCE_EVICTABLE) != 0;
}

// Offloads, and is among only (every resource when only is null).
bool OffloadsAmong(const ResourceRuntime& resource, const std::set<std::string>* only) {
  return Offloads(resource) && (only == nullptr || only->count(resource.label) != 0);
}

}  // namespace

template <typename Call>
Status Engine::CallOnCopyStream(const ResourceRuntime& resource, const char* hook, Call&& call) {
  MSTAR_RETURN_IF_ERROR(CopyAfterExec(resource));
  LaneUse copy(ResourceStreams(resource), DeviceStreams::kCopy);
  mstar_stream* stream = copy.stream();
  return CallPlugin(*resource.instance, hook, [&] { return call(stream); });
}

AdmitOutcome Engine::CheckReady(int node_index, const mstar_request_info_t& info, bool allow_reload,
                                const std::map<std::string, std::vector<uint8_t>>& published) {
  NodeRuntime& node = *runtime_->node(node_index);
  AdmitOutcome result;
  Result<bool> offloaded = IsOffloaded(node_index, info.request_id);
  if (!offloaded.ok()) {
    // Not knowing is not "no": running without its offloaded state would corrupt the request.
    return {MSTAR_ADMIT_UNSERVABLE, 0, "", offloaded.status().message()};
  }
  if (offloaded.value()) {
    if (!allow_reload) return {MSTAR_ADMIT_NOT_READY, MSTAR_WAIT_RELOAD, "", ""};
    Result<bool> reloaded = ReloadRequest(node_index, info.request_id);
    if (!reloaded.ok()) {
      return {MSTAR_ADMIT_UNSERVABLE, 0, "", reloaded.status().message(),
              reloaded.status().code() == Code::kDataLoss};
    }
    if (!reloaded.value()) return {MSTAR_ADMIT_NOT_READY, MSTAR_WAIT_CAPACITY, "", ""};
    result.reloaded = true;
  }
  for (ResourceRuntime* resource : node.resources) {
    if (resource->table()->check_ready == nullptr) continue;
    auto it = published.find(resource->label);
    const void* data = it != published.end() && !it->second.empty() ? it->second.data() : nullptr;
    uint64_t size = it != published.end() ? it->second.size() : 0;
    mstar_admit_t admit{sizeof(mstar_admit_t), MSTAR_ABI_MINOR, MSTAR_ADMIT_READY, 0, 0};
    std::lock_guard<std::mutex> lock(resource->mutex);
    Status status = CallPlugin(*resource->instance, "check_ready", [&] {
      return resource->table()->check_ready(resource->instance->self(), &info, data, size, &admit);
    });
    if (!status.ok()) return {MSTAR_ADMIT_UNSERVABLE, 0, resource->label, status.message()};
    if (admit.outcome != MSTAR_ADMIT_READY && admit.outcome != MSTAR_ADMIT_NOT_READY) {
      return {MSTAR_ADMIT_UNSERVABLE, 0, resource->label,
              UnknownAdmitOutcome(*resource, "check_ready", admit.outcome)};
    }
    if (admit.outcome != MSTAR_ADMIT_READY) {
      result.outcome = MSTAR_ADMIT_NOT_READY;
      result.wait_reason = admit.wait_reason;
      result.resource = resource->label;
      return result;
    }
  }
  return result;
}

bool Engine::Evictable(int node_index, const std::set<std::string>* only) {
  for (ResourceRuntime* resource : runtime_->node(node_index)->resources) {
    if (OffloadsAmong(*resource, only) && resource->table()->offload != nullptr) return true;
  }
  return false;
}

uint64_t Engine::Reclaimable(int node_index, RequestId id, const std::set<std::string>* only) {
  uint64_t total = 0;
  for (ResourceRuntime* resource : runtime_->node(node_index)->resources) {
    if (!OffloadsAmong(*resource, only) || resource->table()->reclaimable == nullptr) continue;
    uint64_t units = 0;
    std::lock_guard<std::mutex> lock(resource->mutex);
    Status status = CallPlugin(*resource->instance, "reclaimable", [&] {
      return resource->table()->reclaimable(resource->instance->self(), id, &units);
    });
    if (status.ok()) total += units;
  }
  return total;
}

double Engine::OffloadPriority(int node_index, RequestId id, const std::set<std::string>* only) {
  std::optional<double> largest;
  for (ResourceRuntime* resource : runtime_->node(node_index)->resources) {
    if (!OffloadsAmong(*resource, only) || resource->table()->offload_priority == nullptr) continue;
    double priority = 0;
    std::lock_guard<std::mutex> lock(resource->mutex);
    Status status = CallPlugin(*resource->instance, "offload_priority", [&] {
      return resource->table()->offload_priority(resource->instance->self(), id, &priority);
    });
    if (status.ok() && (!largest || priority > *largest)) largest = priority;
  }
  return largest.value_or(0.0);
}

uint64_t Engine::OffloadRequest(int node_index, RequestId id, std::string* error,
                                const std::set<std::string>* only) {
  uint64_t reclaimed = 0;
  for (ResourceRuntime* resource : runtime_->node(node_index)->resources) {
    if (!OffloadsAmong(*resource, only) || resource->table()->offload == nullptr) continue;
    uint64_t units = 0;
    std::lock_guard<std::mutex> lock(resource->mutex);
    Status status = CallOnCopyStream(*resource, "offload", [&](mstar_stream* stream) {
      return resource->table()->offload(resource->instance->self(), id, 0, stream, &units);
    });
    if (!status.ok()) {
      Log().warn("offloading request {}: {}", id, status.message());
      if (error != nullptr) *error = status.message();
      continue;
    }
    reclaimed += units;
  }
  return reclaimed;
}

Result<bool> Engine::ReloadRequest(int node_index, RequestId id) {
  for (ResourceRuntime* resource : runtime_->node(node_index)->resources) {
    if (!Offloads(*resource) || resource->table()->reload == nullptr ||
        resource->table()->is_offloaded == nullptr)
      continue;
    std::lock_guard<std::mutex> lock(resource->mutex);
    uint32_t offloaded = 0;
    MSTAR_RETURN_IF_ERROR(CallPlugin(*resource->instance, "is_offloaded", [&] {
      return resource->table()->is_offloaded(resource->instance->self(), id, &offloaded);
    }));
    if (offloaded == 0) continue;
    uint32_t done = 0;
    MSTAR_RETURN_IF_ERROR(CallOnCopyStream(*resource, "reload", [&](mstar_stream* stream) {
      return resource->table()->reload(resource->instance->self(), id, stream, &done);
    }));
    if (done == 0) return false;
  }
  return true;
}

Result<bool> Engine::IsOffloaded(int node_index, RequestId id) {
  for (ResourceRuntime* resource : runtime_->node(node_index)->resources) {
    if (!Offloads(*resource) || resource->table()->is_offloaded == nullptr) continue;
    uint32_t offloaded = 0;
    std::lock_guard<std::mutex> lock(resource->mutex);
    MSTAR_RETURN_IF_ERROR(CallPlugin(*resource->instance, "is_offloaded", [&] {
      return resource->table()->is_offloaded(resource->instance->self(), id, &offloaded);
    }));
    if (offloaded != 0) return true;
  }
  return false;
}

std::map<RequestId, std::map<std::string, std::vector<uint8_t>>> Engine::FinalizeBatch(
    ExecutingBatch& batch, const std::vector<RequestId>& publish) {
  std::map<RequestId, std::map<std::string, std::vector<uint8_t>>> out;
  NodeRuntime& node = *runtime_->node(batch.node);
  for (RequestId id : publish) {
    StepRequest* request = nullptr;
    for (StepRequest& r : batch.requests) {
      if (r.id == id && r.active()) request = &r;
    }
    if (request == nullptr) continue;
    for (ResourceRuntime* resource : node.resources) {
      if (resource->table()->publish == nullptr) continue;
      mstar_bytes bytes;
      std::lock_guard<std::mutex> lock(resource->mutex);
      Status status = CallPlugin(*resource->instance, "publish", [&] {
        return resource->table()->publish(resource->instance->self(), id, &bytes);
      });
      if (!status.ok()) {
        request->Fail(status.message());
        break;
      }
      out[id][resource->label] = std::move(bytes.data);
    }
  }
  return out;
}

std::map<std::string, std::vector<uint8_t>> Engine::TakeResidentDelta(int node_index) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (ResourceRuntime* resource : runtime_->node(node_index)->resources) {
    // A resource that does not declare deltas (kv_paged on one rank) records no moves.
    if (resource->table()->take_resident_delta == nullptr ||
        (resource->flags & MSTAR_RESOURCE_RESIDENT_DELTA) == 0)
      continue;
    mstar_bytes bytes;
    std::lock_guard<std::mutex> lock(resource->mutex);
    Status status = CallPlugin(*resource->instance, "take_resident_delta", [&] {
      return resource->table()->take_resident_delta(resource->instance->self(), &bytes);
    });
    if (!status.ok()) {
      Log().error("{}", status.message());
      continue;
    }
    out[resource->label] = std::move(bytes.data);
  }
  return out;
}

Result<bool> Engine::ApplyResidentDelta(int node_index,
                                        std::map<std::string, std::vector<uint8_t>>& delta) {
  bool complete = true;
  for (ResourceRuntime* resource : runtime_->node(node_index)->resources) {
    auto it = delta.find(resource->label);
    if (it == delta.end() || it->second.empty()) continue;
    if (resource->table()->apply_resident_delta == nullptr) {
      return FailedPrecondition(resource->instance->label() + " cannot apply resident deltas");
    }
    uint64_t consumed = 0;
    uint32_t done = 0;
    std::lock_guard<std::mutex> lock(resource->mutex);
    MSTAR_RETURN_IF_ERROR(CallPlugin(*resource->instance, "apply_resident_delta", [&] {
      return resource->table()->apply_resident_delta(resource->instance->self(), it->second.data(),
                                                     it->second.size(), &consumed, &done);
    }));
    it->second.erase(it->second.begin(),
                     it->second.begin() +
                         static_cast<ptrdiff_t>(std::min<uint64_t>(consumed, it->second.size())));
    complete = complete && done != 0;
  }
  return complete;
}

}  // namespace mstar
