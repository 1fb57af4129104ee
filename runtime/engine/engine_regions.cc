// Copyright 2026 The M* runtime authors. SPDX-License-Identifier: Apache-2.0
//
// Piecewise capture: the engine's side of a submodule's regions (capture/region_captures.h).
//
// Warmup, per region config and bucket (largest first): one eager forward of the capture walk over
// a dummy step at the bucket's size, with the regions recording, yields the inputs the forward
// hands the region (its template: names, dtypes, trailing shapes, the bucket's rows); then, per
// slot, capture_begin (capture.region set) -> run_region on that slot's static inputs inside the
// backend's capture -> capture_end. What run_region wrote is the graph's static outputs. A failure
// is an error naming the node, region, walk and bucket, unless capture.allow_fallback is set.
//
// A step: a batch without a whole-forward lease leases a region slot on the plan thread
// (ReserveRegionSlot); on the exec thread, just before the eager forward, the slot becomes the
// node's current one (never at lease time: the lease runs ahead of the forward while the
// previous batch is still replaying), and after the forward it is in flight until its replays'
// work completes. A batch that never reaches its forward gives the slot back.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "capture/buckets.h"
#include "core/logging.h"
#include "engine/dummy_step.h"
#include "engine/engine.h"

namespace mstar {
namespace {

std::string BucketText(const mstar_capture_bucket_t& bucket) {
  return fmt::format("batch {} with {} tokens", bucket.batch_size, bucket.num_tokens);
}

// An event about region config `index` of node at bucket.
CaptureEvent RegionEvent(CaptureEventKind kind, const std::string& node,
                         const mstar_capture_config_t& config, int index,
                         const mstar_capture_bucket_t& bucket) {
  CaptureEvent event;
  event.kind = kind;
  event.node = node;
  event.walk = config.capture_walk;
  event.region = config.region;
  event.config = index;
  event.bucket = bucket;
  return event;
}

}  // namespace

uint32_t Engine::SlotsOf(const mstar_capture_config_t& config) const {
  return std::max<uint32_t>(1,
                            config.num_slots != 0 ? config.num_slots : capture_options_.num_slots);
}

Status Engine::CaptureRegions(NodeRuntime& node, NodeCaptures& captures, CaptureBackend* backend) {
  std::vector<int> configs;
  uint32_t slots = 0;
  for (size_t i = 0; i < node.capture_configs.size(); ++i) {
    const mstar_capture_config_t& config = node.capture_configs[i];
    if (config.region == nullptr || !CapturesInModel(node, i, config)) continue;
    if (node.table()->run_region == nullptr) {
      return FailedPrecondition(
          fmt::format("node '{}' declares region '{}' but its submodule has no run_region",
                      node.name, config.region));
    }
    configs.push_back(static_cast<int>(i));
    slots = std::max(slots, SlotsOf(config));
  }
  if (configs.empty()) return Status::Ok();
  auto regions =
      std::make_unique<RegionCaptures>(node.name, node.instance.get(), &node.capture_configs,
                                       backend, captures.ReserveSlotIds(slots), slots);
  // region_launch reaches the regions from now on (recording while their templates are taken).
  mstar_host_context* context = node.instance->context();
  context->regions = regions.get();
  for (int i : configs) {
    const mstar_capture_config_t& config = node.capture_configs[static_cast<size_t>(i)];
    std::vector<uint32_t> order(config.num_buckets);
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return RegionRows(config, config.buckets[a]) > RegionRows(config, config.buckets[b]);
    });
    for (uint32_t b : order) {
      Status captured = CaptureRegionBucket(node, *regions, i, b);
      if (captured.ok()) continue;
      regions->Remove(i, b);
      CaptureEvent failed =
          RegionEvent(CaptureEventKind::kCaptureFailed, node.name, config, i, config.buckets[b]);
      failed.reason = captured.message();
      backend->Record(std::move(failed));
      std::string what = fmt::format("capturing node '{}' region '{}' (walk '{}') at {} failed: {}",
                                     node.name, config.region, config.capture_walk,
                                     BucketText(config.buckets[b]), captured.message());
      if (!capture_options_.allow_fallback) {
        context->regions = nullptr;
        return FailedPrecondition(what +
                                  " (set capture.allow_fallback = true to run it eagerly instead)");
      }
      Log().warn("{}; that bucket runs eagerly (capture.allow_fallback)", what);
    }
  }
  captures.SetRegions(std::move(regions));
  return Status::Ok();
}

Status Engine::CaptureRegionBucket(NodeRuntime& node, RegionCaptures& regions, int config_index,
                                   uint32_t bucket_index) {
  const mstar_capture_config_t& config = node.capture_configs[static_cast<size_t>(config_index)];
  const mstar_capture_bucket_t& bucket = config.buckets[bucket_index];
  const uint32_t rows = RegionRows(config, bucket);
  mstar_stream* stream = NodeStreams(node).exec();
  MSTAR_ASSIGN_OR_RETURN(CaptureBackend * backend, BackendForCapture(stream->device));

  // The template: what one eager forward at the bucket's size hands the region.
  std::map<std::string, TensorMapPtr> recorded;
  {
    DummyStep dummy;
    MSTAR_RETURN_IF_ERROR(PrepareDummyStep(node, config, bucket, -1, dummy));
    std::vector<const mstar_tensor_map_t*> inputs;
    std::vector<TensorMapPtr> kept;
    std::vector<mstar_tensor_map_t*> outputs;
    for (const TensorMapPtr& map : dummy.prepared) {
      inputs.push_back(map.get());
      kept.push_back(NewTensorMap());
      outputs.push_back(kept.back().get());
    }
    std::vector<const mstar_tensor_map*> views;
    for (const TensorMapPtr& map : dummy.views) views.push_back(map.get());
    std::vector<mstar_resource_view_t> resource_views;
    mstar_step_t step = dummy.Step(node, inputs, outputs, resource_views, views, stream);
    regions.StartRecording();
    Status ran = ForwardEager(node, step, true);
    recorded = regions.StopRecording();
    dummy.Leave();
    if (node.table()->cleanup_request != nullptr) {
      std::lock_guard<std::mutex> lock(node.mutex);
      for (mstar_request_id_t id : dummy.ids) node.CleanupRequest(id);
    }
    MSTAR_RETURN_IF_ERROR(ran.WithContext("the eager forward that finds the region's inputs"));
  }
  auto found = recorded.find(config.region);
  if (found == recorded.end()) {
    return FailedPrecondition(fmt::format(
        "the forward of walk '{}' at this bucket never launched region '{}' (region_launch)",
        config.capture_walk, config.region));
  }

  // One graph per slot, each over its own static inputs.
  for (uint32_t k = 0; k < SlotsOf(config); ++k) {
    auto graph = std::make_unique<RegionGraph>();
    graph->config = config_index;
    graph->bucket = bucket_index;
    graph->rows = rows;
    graph->slot = regions.first_slot() + static_cast<int32_t>(k);
    graph->outputs = NewTensorMap();
    MSTAR_RETURN_IF_ERROR(graph->inputs.Init(*found->second, rows));
    mstar_capture_info_t info{
        sizeof(mstar_capture_info_t),
        MSTAR_ABI_MINOR,
        config.capture_walk,
        config.region,
        bucket,
        graph->slot,
        0,
        stream,
        (static_cast<uint64_t>(node.index) << 32) | static_cast<uint32_t>(config_index)};
    const mstar_submodule_vtable_t* t = node.table();
    Result<GraphHandle> captured = CaptureWithHooks(node, backend, info, [&] {
      return CallPlugin(*node.instance, "run_region", [&] {
        return t->run_region(node.instance->self(), config.region, graph->inputs.map(),
                             graph->outputs.get(), stream);
      });
    });
    MSTAR_RETURN_IF_ERROR(captured.status());
    graph->graph = captured.value();
    Result<ExecHandle> exec = backend->Instantiate(graph->graph);
    if (!exec.ok()) {
      backend->DestroyGraph(graph->graph);
      return exec.status();
    }
    graph->exec = exec.value();
    CaptureEvent event =
        RegionEvent(CaptureEventKind::kCapture, node.name, config, config_index, bucket);
    event.slot = graph->slot;
    event.rows = rows;
    backend->Record(std::move(event));
    regions.Add(std::move(graph));
  }
  return Status::Ok();
}

RegionCaptures* Engine::regions(int node) {
  if (node < 0 || static_cast<size_t>(node) >= captures_.size()) return nullptr;
  NodeCaptures* captures = captures_[static_cast<size_t>(node)].get();
  return captures != nullptr ? captures->regions() : nullptr;
}

std::optional<int32_t> Engine::ReserveRegionSlot(const ExecutingBatch& batch) {
  RegionCaptures* found = regions(batch.node);
  if (found == nullptr || batch.slot >= 0 || batch.region_slot >= 0 || batch.ActiveCount() == 0 ||
      !found->ReplaysWalk(batch.walk))
    return std::nullopt;
  return found->Lease();
}

void Engine::ReleaseRegionSlot(ExecutingBatch& batch) {
  if (batch.region_slot < 0) return;
  if (RegionCaptures* found = regions(batch.node)) found->Release(batch.region_slot);
  batch.region_slot = -1;
}

Status Engine::ForwardWithRegions(NodeRuntime& node, ExecutingBatch& batch, mstar_step_t& step,
                                  bool batched) {
  RegionCaptures* found = regions(node.index);
  if (found == nullptr || !found->ReplaysWalk(batch.walk)) {
    ReleaseRegionSlot(batch);
    return ForwardEager(node, step, batched);
  }
  std::string why_none;
  if (batch.region_slot < 0) {
    std::optional<int32_t> leased = found->Lease();
    if (leased) {
      batch.region_slot = *leased;
    } else {
      why_none = "every region slot is leased or in flight";
    }
  }
  found->Enter(batch.walk, batch.region_slot, why_none);
  Status status = ForwardEager(node, step, batched);
  found->Exit();
  batch.region_slot = -1;  // in flight now (a retry leases again)
  return status;
}

}  // namespace mstar
