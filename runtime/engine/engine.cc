// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// The engine's model-level operations: loading, warmup, requests, batch caps and capture groups.
#include "engine/engine.h"

#include <algorithm>

#include "core/logging.h"

namespace mstar {

Engine::Engine(std::unique_ptr<ModelRuntime> runtime)
    : runtime_(std::move(runtime)),
      captures_(runtime_->nodes().size()),
      empty_params_(std::make_shared<ConfigTree>()) {}

Engine::~Engine() {
  if (runtime_ != nullptr) Shutdown();
}

Result<std::unique_ptr<Engine>> Engine::Load(const ModelSpec& model, const PluginRegistry& registry,
                                             const ModelRuntimeOptions& options) {
  MSTAR_ASSIGN_OR_RETURN(std::unique_ptr<ModelRuntime> runtime,
                         ModelRuntime::Load(model, registry, options));
  auto engine = std::make_unique<Engine>(std::move(runtime));
  MSTAR_RETURN_IF_ERROR(engine->CreateStreams());
  return engine;
}

Status Engine::Warmup() {
  for (auto& node : runtime_->nodes()) {
    if (node->table()->warmup == nullptr) continue;
    std::lock_guard<std::mutex> lock(node->mutex);
    MSTAR_RETURN_IF_ERROR(CallPlugin(*node->instance, "warmup", [&] {
      return node->table()->warmup(node->instance->self(), NodeStreams(*node).exec());
    }));
    MSTAR_RETURN_IF_ERROR(FinishExec(*node));
  }
  if (!capture_options_.enabled) return Status::Ok();
  for (auto& node : runtime_->nodes()) MSTAR_RETURN_IF_ERROR(CaptureNode(*node));
  return Status::Ok();
}

void Engine::Shutdown() {
  // Captured graphs and buffers go first: they may hold tensors whose deleters live in plugins.
  // region_launch stops reaching the regions before they go.
  if (runtime_ != nullptr) {
    for (auto& node : runtime_->nodes()) node->instance->context()->regions = nullptr;
  }
  for (std::unique_ptr<NodeCaptures>& captures : captures_) captures.reset();
  runtime_.reset();
  node_streams_.clear();
  device_streams_.clear();  // after the instances: a plugin may still have work on them
}

Status Engine::AddRequest(const mstar_request_info_t& info) {
  std::vector<ResourceRuntime*> added;
  for (auto& resource : runtime_->resources()) {
    Status status;
    {
      std::lock_guard<std::mutex> lock(resource->mutex);
      status = CallPlugin(*resource->instance, "add_request", [&] {
        return resource->table()->add_request(resource->instance->self(), &info);
      });
    }
    if (!status.ok()) {
      for (ResourceRuntime* undo : added) {  // nothing half-registered stays behind
        std::lock_guard<std::mutex> lock(undo->mutex);
        undo->RemoveRequest(info.request_id);
      }
      return status;
    }
    added.push_back(resource.get());
  }
  return Status::Ok();
}

void Engine::RemoveRequest(RequestId id) {
  for (auto& resource : runtime_->resources()) {
    std::lock_guard<std::mutex> lock(resource->mutex);
    resource->RemoveRequest(id);
  }
  for (auto& node : runtime_->nodes()) {
    if (node->table()->cleanup_request == nullptr) continue;
    std::lock_guard<std::mutex> lock(node->mutex);
    node->CleanupRequest(id);
  }
}

std::optional<uint32_t> Engine::GetMaxBatchSize(int node_index, const std::string& walk) {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = max_batch_cache_.find({node_index, walk});
    if (it != max_batch_cache_.end()) return it->second;
  }
  NodeRuntime& node = *runtime_->node(node_index);
  std::optional<uint32_t> cap;
  if (!node.batched()) cap = 1;
  if (node.table()->max_batch_size != nullptr) {
    uint32_t max = 0;
    std::lock_guard<std::mutex> lock(node.mutex);
    Status status = CallPlugin(*node.instance, "max_batch_size", [&] {
      return node.table()->max_batch_size(node.instance->self(), walk.c_str(), &max);
    });
    if (!status.ok()) {
      Log().warn("{}; batching {} without a cap", status.message(), node.name);
    } else if (max > 0) {
      cap = cap ? std::min(*cap, max) : max;
    }
  }
  // The largest captured batch of a config that caps eager batches.
  for (const mstar_capture_config_t& config : node.capture_configs) {
    if ((config.flags & MSTAR_CAPTURE_CAPS_BATCH) == 0) continue;
    bool replays = false;
    for (uint32_t i = 0; i < config.num_replay_walks; ++i)
      replays |= walk == config.replay_walks[i];
    if (!replays) continue;
    uint32_t largest = 0;
    for (uint32_t i = 0; i < config.num_buckets; ++i)
      largest = std::max(largest, config.buckets[i].batch_size);
    if (largest > 0) cap = cap ? std::min(*cap, largest) : largest;
  }
  std::lock_guard<std::mutex> lock(cache_mutex_);
  max_batch_cache_[{node_index, walk}] = cap;
  return cap;
}

bool Engine::SplitsByCaptureKey(int node_index, const std::string& walk) {
  NodeRuntime& node = *runtime_->node(node_index);
  if (node.table()->capture_key == nullptr) return false;
  const auto index = static_cast<size_t>(node_index);
  return index < captures_.size() && captures_[index] != nullptr &&
         captures_[index]->SplitsByKey(walk);
}

std::optional<uint64_t> Engine::CaptureGroup(int node_index, const std::string& walk,
                                             const mstar_request_info_t& info) {
  if (!SplitsByCaptureKey(node_index, walk)) return std::nullopt;
  NodeRuntime& node = *runtime_->node(node_index);
  uint64_t key = 0;
  std::lock_guard<std::mutex> lock(node.mutex);
  Status status = CallPlugin(*node.instance, "capture_key", [&] {
    return node.table()->capture_key(node.instance->self(), &info, &key);
  });
  if (!status.ok()) {
    Log().warn("{}; the request joins capture group 0", status.message());
    return 0;
  }
  return key;
}

bool Engine::CanPrePlan(int node_index) {
  for (ResourceRuntime* resource : runtime_->node(node_index)->resources) {
    if (resource->pre_plans()) return true;
  }
  return false;
}

bool Engine::NeedsSlotFence(int node_index) {
  for (ResourceRuntime* resource : runtime_->node(node_index)->resources) {
    if ((resource->flags & MSTAR_RESOURCE_NEEDS_SLOT_FENCE) != 0) return true;
  }
  return false;
}

EngineTimings Engine::timings() const {
  return EngineTimings{forward_ns_.load(), prepare_ns_.load(), stop_ns_.load(),
                       forward_calls_.load()};
}

}  // namespace mstar
